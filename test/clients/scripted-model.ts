// A scripted model behind a real HTTP server on 127.0.0.1, for driving real agent clients in tests.
// Each API module (Anthropic Messages, OpenAI Responses) turns its requests into one Conversation,
// asks the test's Script what the model says next, and writes it in that API's streaming format.
// Every request is recorded, so a test can assert what reached the model.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

/** Largest request body the scripted model reads (clients send their whole context each turn). */
const REQUEST_BODY_MAX_BYTES = 16 * 1024 * 1024;

export interface ToolResult {
  /** the tool's full name as the client offered it (e.g. mcp__agentmbx__mbx_inbox) */
  name: string;
  output: string;
}

/** What the client has sent the model so far, the same for every API. */
export interface Conversation {
  /** names of the tools the client offers */
  tools: string[];
  /** tool namespaces (Responses API): a tool offered as <namespace>__<name> is called by both */
  namespaces?: string[];
  /** results of the model's earlier tool calls, oldest first */
  toolResults: ToolResult[];
  /** every piece of text of the request (system, messages, tool results), for asserting */
  text: string;
}

/** The model's next answer: one tool call (`tool` is matched as a suffix of an offered name), or text that ends the turn. */
export type Reply = { tool: string; input: Record<string, unknown> } | { text: string };
/** The model's next answer; a script may wait (e.g. for mail to arrive during the turn) before it answers. */
export type Script = (conversation: Conversation) => Reply | Promise<Reply>;

export interface RecordedRequest {
  path: string;
  body: Record<string, unknown>;
  conversation: Conversation;
}

export interface ScriptedModel {
  url: string;
  requests: RecordedRequest[];
  /** the script answers turns from now on */
  setScript(script: Script): void;
  close(): Promise<void>;
}

/** The offered tool whose name ends with `suffix` (clients prefix MCP tools with their server name). */
export function offeredTool(conversation: Conversation, suffix: string): string | undefined {
  return conversation.tools.find((name) => name === suffix || name.endsWith(`__${suffix}`) || name.endsWith(`_${suffix}`));
}

/** One API's view of the requests: how to read a conversation and how to write a reply. */
export interface ApiDialect {
  /** the conversation of a request the model should answer; null for anything else (answered by `other`) */
  conversation(path: string, body: Record<string, unknown>): Conversation | null;
  reply(res: ServerResponse, body: Record<string, unknown>, reply: Reply, turn: number): void;
  /** answers a request that is not a model turn (token counts, model lists, …) */
  other(res: ServerResponse, path: string, body: Record<string, unknown>): void;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > REQUEST_BODY_MAX_BYTES) req.destroy(new Error('request body too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** Writes server-sent events: each is [event name, data object]. */
export function sendEvents(res: ServerResponse, events: ReadonlyArray<readonly [string, unknown]>): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [event, data] of events) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

/** Starts the scripted model on 127.0.0.1 (closed after the test file); until setScript it ends every turn with text. */
export async function startScriptedModel(dialect: ApiDialect): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  let script: Script = () => ({ text: 'done' });
  let turns = 0;
  const server: Server = createServer((req, res) => {
    readBody(req)
      .then((raw) => {
        const path = (req.url ?? '/').split('?')[0] ?? '/';
        let body: Record<string, unknown> = {};
        try {
          body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
        } catch {
          sendJson(res, 400, { error: { type: 'invalid_request_error', message: 'body is not JSON' } });
          return;
        }
        const conversation = dialect.conversation(path, body);
        if (conversation === null) {
          dialect.other(res, path, body);
          return;
        }
        requests.push({ path, body, conversation });
        const turn = ++turns;
        return Promise.resolve(script(conversation)).then((reply) => dialect.reply(res, body, reply, turn));
      })
      .catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  after(close);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    setScript: (next) => {
      script = next;
    },
    close,
  };
}

/** Text of a content value in either API: a string, or blocks with `text`/`content`. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(textOf).join('\n');
  if (content !== null && typeof content === 'object') {
    const o = content as Record<string, unknown>;
    return [o['text'], o['content'], o['output']]
      .filter((v) => v !== undefined)
      .map(textOf)
      .join('\n');
  }
  return '';
}
