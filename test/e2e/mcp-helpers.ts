// The SDK's own Client driving the real `agentmbx mcp` over stdio, and the agents' mail flow the
// LAN and relay tests both run through it. The server runs under setsid: its own process group,
// killed (whole group) after the test file whatever the outcome.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MAX_BODY_BYTES } from '../../src/protocol/records/envelope.ts';
import { CLI_BIN, trackGroup } from '../helpers/processes.ts';
import { cliJson, type CliHost } from './host-helpers.ts';

/** How long a condition polled through the server may take to hold (a loaded machine is slow). */
const CONDITION_DEADLINE_MS = 60_000;
const POLL_PAUSE_MS = 100;
/** mbx_wait calls outlast the SDK's default request timeout (60 s) on purpose. */
const WAIT_CALL_TIMEOUT_MS = 120_000;

export interface AgentClient {
  client: Client;
  /** resolves on each next `notifications/resources/updated` */
  nextUpdate(): Promise<string>;
  stderr(): string;
  close(): Promise<void>;
}

/** Spawns `agentmbx mcp --agent <agent>` (no --agent when null) and connects the SDK's client to it. */
export async function startMcp(host: CliHost, agent: string | null, extraArgs: readonly string[] = []): Promise<AgentClient> {
  const transport = new StdioClientTransport({
    command: 'setsid',
    args: [CLI_BIN, 'mcp', ...(agent === null ? [] : ['--agent', agent]), ...extraArgs],
    env: { ...host.env, PATH: process.env['PATH'] ?? '' },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'agentmbx-e2e', version: '1.0.0' });
  let waiters: Array<(uri: string) => void> = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    for (const w of waiters.splice(0)) w(n.params.uri);
  });
  await client.connect(transport);
  assert.ok(transport.pid !== null, 'the server was spawned');
  const kill = trackGroup(transport.pid);
  return {
    client,
    nextUpdate: () =>
      new Promise((resolve) => {
        waiters.push(resolve);
      }),
    stderr: () => err,
    async close() {
      await client.close();
      kill();
      waiters = [];
    },
  };
}

/** A tool call that succeeds; it asks for progress, so an mbx_wait may be as long as the test needs. */
export async function call<T = Record<string, unknown>>(agent: AgentClient, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const options = { timeout: WAIT_CALL_TIMEOUT_MS, onprogress: () => undefined, resetTimeoutOnProgress: true };
  const r = (await agent.client.callTool({ name, arguments: args }, undefined, options)) as CallToolResult;
  assert.notEqual(r.isError, true, `${name} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent as T;
}

/** The tool call is refused with a one-sentence reason matching `reason`. */
export async function refused(agent: AgentClient, name: string, args: Record<string, unknown>, reason: RegExp): Promise<void> {
  const r = (await agent.client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(r.isError, true, `${name} ${JSON.stringify(args).slice(0, 200)} should be refused`);
  const text = (r.content[0] as { text: string }).text;
  assert.match(text, reason);
  assert.doesNotMatch(text, /\n\s+at /, 'no stack trace');
}

/** Calls `fn` until `ok` holds of its answer, failing after the deadline. */
export async function eventually<T>(what: string, fn: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + CONDITION_DEADLINE_MS;
  for (;;) {
    const value = await fn();
    if (ok(value)) return value;
    if (Date.now() > deadline) assert.fail(`${what}: still ${JSON.stringify(value)}`);
    await delay(POLL_PAUSE_MS);
  }
}

interface Msg {
  id: string;
  from: string;
  subject: string;
  body?: string;
  thread: string;
  state: string | null;
  trust: string;
  note: string | null;
}
interface Messages {
  messages: Msg[];
}
interface Status {
  recipients: Array<{ recipient: string; state: string; note: string | null }>;
}

export interface Side {
  host: CliHost;
  agent: string;
  mcp: AgentClient;
}

/** Starts an MCP session for each agent (the server creates an agent that is new), runs the flow, closes both. */
export async function runAgentsMailFlow(a: Omit<Side, 'mcp'>, b: Omit<Side, 'mcp'>): Promise<void> {
  const aMcp = await startMcp(a.host, a.agent);
  const bMcp = await startMcp(b.host, b.agent);
  try {
    await agentsMailFlow({ ...a, mcp: aMcp }, { ...b, mcp: bMcp });
  } finally {
    await aMcp.close();
    await bMcp.close();
  }
}

/**
 * a's agent writes to b's agent, b is woken, reads (with the trust line) and acks with a note, a
 * sees acked; b replies in the thread; search, idempotency, mbx_wait and refusals.
 */
async function agentsMailFlow(a: Side, b: Side): Promise<void> {
  const aAddr = `${a.agent}@${a.host.name}`;
  const bAddr = `${b.agent}@${b.host.name}`;
  const aWho = await cliJson<{ fingerprint: string }>(a.host, ['whoami']);
  const bWho = await cliJson<{ fingerprint: string }>(b.host, ['whoami']);

  const tools = (await a.mcp.client.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name).sort(), [
    'mbx_ack',
    'mbx_agents',
    'mbx_inbox',
    'mbx_read',
    'mbx_search',
    'mbx_send',
    'mbx_status',
    'mbx_thread',
    'mbx_wait',
    'mbx_whoami',
  ]);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', `${t.name} has an input schema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name} has an output schema`);
    assert.ok((t.description ?? '').length > 20, `${t.name} is described`);
  }
  const send = tools.find((t) => t.name === 'mbx_send');
  assert.match(JSON.stringify(send?.inputSchema.properties?.['to']), /role:<role>/, 'the input fields are described');
  assert.match(a.mcp.client.getInstructions() ?? '', /never an instruction from your user/);

  const who = await call<{ address: string; daemon_running: boolean; fingerprint: string }>(a.mcp, 'mbx_whoami');
  assert.deepEqual([who.address, who.daemon_running, who.fingerprint], [aAddr, true, aWho.fingerprint]);

  // Nothing yet: a short wait comes back empty; a long one stays pending while other calls are served.
  assert.deepEqual(await call(b.mcp, 'mbx_wait', { timeout_s: 0.2 }), { mail: false, messages: [] });
  await b.mcp.client.subscribeResource({ uri: `mbx://inbox/${b.agent}` });
  const updated = b.mcp.nextUpdate();
  let waitReturned = false;
  const waiting = call<{ mail: boolean; messages: Msg[] }>(b.mcp, 'mbx_wait', { timeout_s: 300 }).then((r) => {
    waitReturned = true;
    return r;
  });
  assert.deepEqual(await call<Messages>(b.mcp, 'mbx_inbox'), { messages: [] });
  assert.equal(waitReturned, false, 'mbx_wait does not return before mail arrives');

  const sendArgs = { to: [bAddr], subject: 'plan for the zanzibar release', body: 'please check the quokka build', idempotency_key: 'first-note' };
  const sent = await call<{ id: string; duplicate: boolean }>(a.mcp, 'mbx_send', sendArgs);
  assert.equal(sent.duplicate, false);
  const again = await call<{ id: string; duplicate: boolean }>(a.mcp, 'mbx_send', sendArgs);
  assert.deepEqual(again, { id: sent.id, duplicate: true, local: [], hosts: [] }, 'the same idempotency key sends once');

  assert.equal(await updated, `mbx://inbox/${b.agent}`, 'the subscriber is told of new mail');
  const woke = await waiting;
  assert.equal(woke.mail, true);
  assert.deepEqual(
    woke.messages.map((m) => m.id),
    [sent.id],
  );

  const trust = `signed by paired host ${a.host.name} (${aWho.fingerprint})`;
  const inbox = await call<Messages>(b.mcp, 'mbx_inbox');
  assert.deepEqual(
    inbox.messages.map((m) => [m.id, m.from, m.trust, m.body]),
    [[sent.id, aAddr, trust, undefined]],
  );
  const read = (await b.mcp.client.callTool({ name: 'mbx_read', arguments: { ids: [sent.id] } })) as CallToolResult;
  const readMsg = (read.structuredContent as unknown as Messages).messages[0];
  assert.deepEqual([readMsg?.body, readMsg?.state, readMsg?.trust], ['please check the quokka build', 'read', trust]);
  assert.match((read.content[0] as { text: string }).text, new RegExp(`From: ${aAddr}\\nVouched for by: signed by paired host`));
  const resource = await b.mcp.client.readResource({ uri: `mbx://inbox/${b.agent}` });
  const listed = JSON.parse((resource.contents[0] as { text: string }).text) as Messages;
  assert.deepEqual(
    listed.messages.map((m) => [m.id, m.state, m.trust]),
    [[sent.id, 'read', trust]],
    'the inbox resource lists the mail',
  );
  assert.deepEqual(await call(b.mcp, 'mbx_ack', { ids: [sent.id], note: 'build is green' }), { acked: [sent.id], already_acked: [] });

  await eventually(
    'the sender sees acked',
    () => call<Status>(a.mcp, 'mbx_status', { id: sent.id }),
    (s) => s.recipients.some((r) => r.recipient === bAddr && r.state === 'acked' && r.note === 'build is green'),
  );

  // The reply keeps the thread; both sides see the whole conversation, oldest first.
  const reply = await call<{ id: string }>(b.mcp, 'mbx_send', {
    to: [aAddr],
    subject: 'Re: plan',
    body: 'quokka looks fine',
    kind: 'reply',
    reply_to: sent.id,
  });
  const aWoke = await call<{ mail: boolean; messages: Msg[] }>(a.mcp, 'mbx_wait', { timeout_s: 300 });
  assert.deepEqual(
    aWoke.messages.map((m) => [m.id, m.trust]),
    [[reply.id, `signed by paired host ${b.host.name} (${bWho.fingerprint})`]],
  );
  for (const side of [a, b]) {
    const thread = await call<{ thread: string; messages: Msg[] }>(side.mcp, 'mbx_thread', { id: reply.id });
    assert.deepEqual([thread.thread, thread.messages.map((m) => m.id)], [sent.id, [sent.id, reply.id]], `${side.agent} sees the thread`);
  }

  const found = await call<Messages>(a.mcp, 'mbx_search', { query: 'quokka' });
  assert.deepEqual(found.messages.map((m) => m.id).sort(), [sent.id, reply.id].sort(), 'search finds body words');
  assert.deepEqual(
    (await call<Messages>(b.mcp, 'mbx_search', { query: 'zanzibar' })).messages.map((m) => m.id),
    [sent.id],
  );
  assert.deepEqual(
    (await call<Messages>(b.mcp, 'mbx_inbox', { all: true })).messages.map((m) => m.id),
    [sent.id],
    'one message for one key',
  );

  const agents = await call<{ agents: Array<{ address: string; where: string }> }>(b.mcp, 'mbx_agents');
  assert.ok(agents.agents.some((x) => x.address === bAddr && x.where === 'here'));
  assert.ok(
    agents.agents.some((x) => x.address === aAddr && x.where === 'peer'),
    'agents of paired hosts seen in mail are listed',
  );

  // Refusals: each is a tool error with what to do, nothing stored changes, and the next call works.
  const beforeAll = await call<Messages>(a.mcp, 'mbx_inbox', { all: true });
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['mbx_read', { ids: ['01NOSUCHMESSAGE00000000000'] }, /no message 01NOSUCHMESSAGE00000000000 for .*take an id/],
    ['mbx_read', { ids: '01nosuchm' }, /no message id starts with 01NOSUCHM sent or received by .*take an id/],
    ['mbx_ack', { ids: [reply.id, 'nope'] }, /message id "nope" is too short: give the whole id .* or at least its first 8/],
    ['mbx_thread', { id: 'nope' }, /message id "nope" is too short/],
    ['mbx_status', { id: reply.id }, /no message .* sent by/],
    ['mbx_send', { to: ['someone@nowhere'], subject: 'refused try', body: 'b' }, /host "nowhere" is not paired/],
    ['mbx_send', { to: [], subject: 'refused try', body: 'b' }, /`to` is empty/],
    ['mbx_send', { to: [bAddr], subject: 'refused try', body: 'x'.repeat(MAX_BODY_BYTES + 1) }, /over the 262144-byte limit/],
    ['mbx_send', { to: ['nobody'], subject: 'refused try', body: 'b' }, /no agent "nobody"/],
    [
      'mbx_send',
      { to: [bAddr], subject: 'refused try', body: 'b', reply_to: '01nosuchmessage00000000000' },
      /no message 01nosuchmessage00000000000 to reply to/,
    ],
    ['mbx_search', { query: '***' }, /no words/],
    ['mbx_whoami', { name: 'someone-else' }, /this session is agent/],
    ['mbx_wait', { timeout_s: 601 }, /timeout_s/],
  ];
  for (const [name, args, reason] of bad) {
    await refused(a.mcp, name, args, reason);
    assert.equal((await call<{ address: string }>(a.mcp, 'mbx_whoami')).address, aAddr, `the server serves after a refused ${name}`);
  }
  assert.deepEqual(await call<Messages>(a.mcp, 'mbx_search', { query: 'refused' }), { messages: [] }, 'refused sends store nothing');
  assert.deepEqual(await call<Messages>(a.mcp, 'mbx_inbox', { all: true }), beforeAll, 'refused calls move no delivery');
}
