// The Anthropic Messages API as Claude Code calls it (POST /v1/messages, streamed as server-sent
// events), answered by a Script. Claude Code points at it through ANTHROPIC_BASE_URL.
import type { ServerResponse } from 'node:http';
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

/** Claude Code offers MCP tools deferred: named in the system text, loaded by a call of this tool. */
const TOOL_SEARCH = 'ToolSearch';

interface Block {
  type?: string;
  id?: string;
  name?: string;
  tool_use_id?: string;
  content?: unknown;
  text?: string;
}
interface Message {
  role?: string;
  content?: string | Block[];
}

function conversation(body: Record<string, unknown>): Conversation {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as Message[]) : [];
  const tools = Array.isArray(body['tools']) ? (body['tools'] as Array<{ name?: string }>).map((t) => t.name ?? '') : [];
  const namesById = new Map<string, string>();
  const toolResults = [];
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type === 'tool_use' && b.id !== undefined) namesById.set(b.id, b.name ?? '');
      const name = namesById.get(b.tool_use_id ?? '') ?? '';
      // loading a deferred tool is the client's plumbing, not a step of the script
      if (b.type === 'tool_result' && name !== TOOL_SEARCH) toolResults.push({ name, output: textOf(b.content) });
    }
  }
  const text = [textOf(body['system']), ...messages.map((m) => textOf(m.content))].join('\n');
  return { tools, toolResults, text };
}

function assistantBlocks(reply: Reply, conv: Conversation, turn: number): { blocks: Array<Record<string, unknown>>; stop: string } {
  if ('text' in reply) return { blocks: [{ type: 'text', text: reply.text }], stop: 'end_turn' };
  const name = offeredTool(conv, reply.tool);
  const deferred = new RegExp(`mcp__[\\w-]+__${reply.tool}\\b`).exec(conv.text)?.[0];
  if (name === undefined && deferred !== undefined && conv.tools.includes(TOOL_SEARCH)) {
    return {
      blocks: [{ type: 'tool_use', id: `toolu_${String(turn).padStart(4, '0')}`, name: TOOL_SEARCH, input: { query: `select:${deferred}` } }],
      stop: 'tool_use',
    };
  }
  if (name === undefined) return { blocks: [{ type: 'text', text: `the client offers no tool ${reply.tool}` }], stop: 'end_turn' };
  return { blocks: [{ type: 'tool_use', id: `toolu_${String(turn).padStart(4, '0')}`, name, input: reply.input }], stop: 'tool_use' };
}

const USAGE = { input_tokens: 10, output_tokens: 10, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

function streamed(res: ServerResponse, model: string, id: string, blocks: Array<Record<string, unknown>>, stop: string): void {
  const events: Array<readonly [string, unknown]> = [
    [
      'message_start',
      { type: 'message_start', message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: USAGE } },
    ],
  ];
  blocks.forEach((block, index) => {
    if (block['type'] === 'text') {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }]);
      events.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: block['text'] } }]);
    } else {
      events.push(['content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } }]);
      events.push([
        'content_block_delta',
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block['input']) } },
      ]);
    }
    events.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  events.push(['message_delta', { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } }]);
  events.push(['message_stop', { type: 'message_stop' }]);
  sendEvents(res, events);
}

const anthropic: ApiDialect = {
  conversation: (path, body) => (path.endsWith('/v1/messages') ? conversation(body) : null),
  reply(res, body, reply, turn) {
    const conv = conversation(body);
    const { blocks, stop } = assistantBlocks(reply, conv, turn);
    const model = typeof body['model'] === 'string' ? body['model'] : 'scripted';
    const id = `msg_${String(turn).padStart(4, '0')}`;
    if (body['stream'] === true) streamed(res, model, id, blocks, stop);
    else sendJson(res, 200, { id, type: 'message', role: 'assistant', model, content: blocks, stop_reason: stop, stop_sequence: null, usage: USAGE });
  },
  other(res, path) {
    if (path.endsWith('/count_tokens')) sendJson(res, 200, { input_tokens: 10 });
    else sendJson(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no ${path} here` } });
  },
};

export function startAnthropicApi(): Promise<ScriptedModel> {
  return startScriptedModel(anthropic);
}
