// The OpenAI Responses API as Codex calls it (POST …/responses, streamed as server-sent events),
// answered by a Script. Codex points at it through a custom `model_providers` entry.
import {
  offeredTool,
  sendEvents,
  sendJson,
  startScriptedModel,
  textOf,
  type ApiDialect,
  type Conversation,
  type Reply,
  type ScriptedModel,
} from './scripted-model.ts';

interface Item {
  type?: string;
  role?: string;
  name?: string;
  namespace?: string;
  call_id?: string;
  arguments?: string;
  output?: unknown;
  content?: unknown;
}
interface Tool {
  type?: string;
  name?: string;
  tools?: Tool[];
}

/** Tool names as offered; a namespace's tools are named <namespace>__<tool>. */
function toolNames(tools: Tool[], prefix = ''): string[] {
  return tools.flatMap((t) => (Array.isArray(t.tools) ? toolNames(t.tools, `${prefix}${t.name ?? ''}__`) : [`${prefix}${t.name ?? t.type ?? ''}`]));
}

function conversation(body: Record<string, unknown>): Conversation {
  const input = Array.isArray(body['input']) ? (body['input'] as Item[]) : [];
  const offered = Array.isArray(body['tools']) ? (body['tools'] as Tool[]) : [];
  const tools = toolNames(offered);
  const namespaces = offered.filter((t) => Array.isArray(t.tools)).map((t) => t.name ?? '');
  const namesByCall = new Map<string, string>();
  const toolResults = [];
  for (const item of input) {
    if (item.type === 'function_call' && item.call_id !== undefined) {
      namesByCall.set(item.call_id, item.namespace === undefined ? (item.name ?? '') : `${item.namespace}__${item.name ?? ''}`);
    }
    if (item.type === 'function_call_output') toolResults.push({ name: namesByCall.get(item.call_id ?? '') ?? '', output: textOf(item.output) });
  }
  const text = [textOf(body['instructions']), ...input.map((i) => textOf(i.content ?? i.output ?? i.arguments))].join('\n');
  return { tools, namespaces, toolResults, text };
}

function outputItem(reply: Reply, conv: Conversation, turn: number): Record<string, unknown> {
  const name = 'tool' in reply ? offeredTool(conv, reply.tool) : undefined;
  if ('tool' in reply && name !== undefined) {
    // a tool of a namespace (Codex offers each MCP server's tools as one) is called by namespace and name
    const cut = name.lastIndexOf('__');
    const call = cut > 0 && conv.namespaces?.includes(name.slice(0, cut)) === true ? { namespace: name.slice(0, cut), name: name.slice(cut + 2) } : { name };
    return { type: 'function_call', id: `fc_${turn}`, call_id: `call_${turn}`, ...call, arguments: JSON.stringify(reply.input), status: 'completed' };
  }
  const text = 'text' in reply ? reply.text : `the client offers no tool ${reply.tool}`;
  return { type: 'message', id: `msg_${turn}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] };
}

const USAGE = {
  input_tokens: 10,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 10,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 20,
};

const responses: ApiDialect = {
  conversation: (path, body) => (path.endsWith('/responses') ? conversation(body) : null),
  reply(res, body, reply, turn) {
    const item = outputItem(reply, conversation(body), turn);
    const id = `resp_${turn}`;
    const response = { id, object: 'response', status: 'completed', model: body['model'] ?? 'scripted', output: [item], usage: USAGE };
    if (body['stream'] !== true) {
      sendJson(res, 200, response);
      return;
    }
    const events: Array<readonly [string, unknown]> = [
      ['response.created', { type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }],
      ['response.output_item.added', { type: 'response.output_item.added', output_index: 0, item }],
    ];
    if (item['type'] === 'message') {
      events.push([
        'response.output_text.delta',
        { type: 'response.output_text.delta', item_id: item['id'], output_index: 0, content_index: 0, delta: textOf(item['content']) },
      ]);
    }
    events.push(['response.output_item.done', { type: 'response.output_item.done', output_index: 0, item }]);
    events.push(['response.completed', { type: 'response.completed', response }]);
    sendEvents(res, events);
  },
  other(res, path) {
    if (path.endsWith('/models')) sendJson(res, 200, { object: 'list', data: [], models: [] });
    else sendJson(res, 404, { error: { type: 'not_found', message: `no ${path} here` } });
  },
};

export function startResponsesApi(): Promise<ScriptedModel> {
  return startScriptedModel(responses);
}
