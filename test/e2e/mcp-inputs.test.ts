// The calls agents really make, through the SDK's Client and the real `agentmbx mcp`: ids as a
// string, in lower case or as a prefix; limits stated in the schemas and named in each refusal; an
// idempotency key reused with other content refused; text content carrying kind, needs-reply, trust.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MAX_BODY_BYTES, MAX_SUBJECT_CHARS } from '../../src/protocol/records/envelope.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/processes.ts';
import { MAIL_TOOL_NAMES } from '../../src/mcp/tools.ts';
import { E2E_TIMEOUT_MS, LOOPBACK, newCliHost, type CliHost } from './host-helpers.ts';
import { call, refused, startMcp } from './mcp-helpers.ts';

interface Msg {
  id: string;
  kind: string;
  needs_reply: boolean;
  refs: string[];
  subject: string;
  thread: string;
}

test('ids as models send them, limits in schemas and refusals, idempotency keys, text that carries the fields', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  const ann = await startMcp(alpha, 'ann');
  const bob = await startMcp(alpha, 'bob');
  try {
    const tools = (await ann.client.listTools()).tools;
    const send = tools.find((t) => t.name === 'mbx_send')?.inputSchema.properties as Record<string, { maxLength?: number; description?: string }>;
    assert.equal(send['subject']?.maxLength, MAX_SUBJECT_CHARS);
    assert.match(send['subject']?.description ?? '', /200 characters \(Unicode code points\)/);
    assert.equal(send['body']?.maxLength, MAX_BODY_BYTES);
    assert.match(send['body']?.description ?? '', /at most 262144 bytes of UTF-8/);

    // `to` as one string; a request needs a reply
    const first = await call<{ id: string }>(ann, 'mbx_send', { to: 'bob', subject: 'can you check the build?', body: 'please', kind: 'request' });
    const second = await call<{ id: string }>(ann, 'mbx_send', { to: ['bob'], subject: 'fyi', body: 'the build is green' });

    const inbox = (await bob.client.callTool({ name: 'mbx_inbox', arguments: {} })) as CallToolResult;
    const text = (inbox.content[0] as { text: string }).text;
    assert.match(text, new RegExp(`^${first.id}  notified  request  \\[needs reply\\]  from ann@alpha \\(local\\)  subject: can you check the build\\?$`, 'm'));
    assert.match(text, new RegExp(`^${second.id}  notified  message  from ann@alpha \\(local\\)  subject: fyi$`, 'm'));

    // needs_reply and refs to an agent of this host, as from another host's mail
    const asked = await call<{ id: string }>(ann, 'mbx_send', {
      to: 'bob',
      subject: 'look',
      body: 'b',
      needs_reply: true,
      refs: ['https://x.example/pr/7', 'T12'],
    });
    const noReply = await call<{ id: string }>(ann, 'mbx_send', { to: 'bob', subject: 'no reply', body: 'b', kind: 'request', needs_reply: false });
    const listed = await call<{ messages: Msg[] }>(bob, 'mbx_inbox', {});
    const flags = (ms: Msg[]): unknown[] => ms.filter((m) => m.id === asked.id || m.id === noReply.id).map((m) => [m.id, m.needs_reply, m.refs]);
    const expected = [
      [asked.id, true, ['https://x.example/pr/7', 'T12']],
      [noReply.id, false, []],
    ];
    assert.deepEqual(flags(listed.messages), expected);
    const readBoth = (await bob.client.callTool({ name: 'mbx_read', arguments: { ids: [asked.id, noReply.id] } })) as CallToolResult;
    assert.deepEqual(flags((readBoth.structuredContent as { messages: Msg[] }).messages), expected);
    assert.match((readBoth.content[0] as { text: string }).text, /\nNeeds-Reply: yes\nRefs: https:\/\/x\.example\/pr\/7, T12\nSubject: look\n/);
    await call(bob, 'mbx_ack', { ids: [asked.id, noReply.id] });

    // ids: one string, lower case, comma-separated; a prefix in reply_to and mbx_thread
    const read = await call<{ messages: Msg[] }>(bob, 'mbx_read', { ids: `${first.id.toLowerCase()}, ${second.id}` });
    assert.deepEqual(
      read.messages.map((m) => m.id),
      [first.id, second.id],
    );
    assert.deepEqual(await call(bob, 'mbx_ack', { ids: second.id.toLowerCase() }), { acked: [second.id], already_acked: [] });
    const reply = await call<{ id: string }>(bob, 'mbx_send', { to: ['ann'], subject: 're', body: 'done', reply_to: first.id.toLowerCase() });
    const thread = await call<{ thread: string; messages: Msg[] }>(ann, 'mbx_thread', { id: reply.id.slice(0, 20).toLowerCase() });
    assert.deepEqual([thread.thread, thread.messages.map((m) => m.id)], [first.id, [first.id, reply.id]]);

    // limits named in the refusal, with their unit
    await refused(
      ann,
      'mbx_send',
      { to: ['bob'], subject: 'big', body: 'x'.repeat(300 * 1024) },
      /^the body is 307200 bytes of UTF-8, over the 262144-byte limit: send it in parts, or put it in a file and send its path in refs$/,
    );
    await refused(
      ann,
      'mbx_send',
      { to: ['bob'], subject: '🙂'.repeat(MAX_SUBJECT_CHARS + 1), body: 'b' },
      /^the subject is 201 characters: a subject is 1 to 200 characters \(Unicode code points\)/,
    );
    const emoji = await call<{ id: string }>(ann, 'mbx_send', { to: ['bob'], subject: '🙂'.repeat(MAX_SUBJECT_CHARS), body: 'b' });
    assert.equal(
      (await call<{ messages: Msg[] }>(bob, 'mbx_read', { ids: [emoji.id] })).messages[0]?.subject,
      '🙂'.repeat(MAX_SUBJECT_CHARS),
      '200 emoji are 200 characters',
    );

    // an idempotency key: the same content is a duplicate, other content is refused naming the first id
    const once = { to: ['bob'], subject: 'deploy', body: 'v1', idempotency_key: 'deploy-1' };
    const sent = await call<{ id: string; duplicate: boolean }>(ann, 'mbx_send', once);
    assert.deepEqual(await call(ann, 'mbx_send', once), { id: sent.id, duplicate: true, local: [], hosts: [] });
    await refused(
      ann,
      'mbx_send',
      { ...once, body: 'v2' },
      new RegExp(`^the idempotency key "deploy-1" already sent ${sent.id}, with other content: .*use a new key for a new message$`),
    );
    const deploys = await call<{ messages: Msg[] }>(bob, 'mbx_search', { query: 'deploy' });
    assert.deepEqual(
      deploys.messages.map((m) => m.id),
      [sent.id],
      'one message for the key',
    );
  } finally {
    await ann.close();
    await bob.close();
  }
});

test("mbx_wait: 75 s is refused with its cap without progress, and with progress outlives the client's timeout", { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann', 'bob']);
  // progress every 200 ms against a client timeout of 3 s: the scale of every 5 s against the SDK's 60 s
  const ann = await startMcp(alpha, 'ann', ['--progress-every', '200ms']);
  const bob = await startMcp(alpha, 'bob');
  try {
    const wait = (await ann.client.listTools()).tools.find((t) => t.name === 'mbx_wait');
    assert.match(wait?.description ?? '', /without one a wait is at most 50 s .*a longer timeout_s is refused/);
    await refused(
      ann,
      'mbx_wait',
      { timeout_s: 75 },
      /^timeout_s 75 is over the 50 s an mbx_wait may last without progress notifications \(clients give up on a call after 60 s\): wait 50 s or less and call again/,
    );

    const CLIENT_TIMEOUT_MS = 3_000;
    let ticks = 0;
    let outlived!: () => void;
    const pastTimeout = new Promise<void>((resolve) => {
      outlived = resolve;
    });
    const waiting = ann.client.callTool({ name: 'mbx_wait', arguments: { timeout_s: 75 } }, undefined, {
      timeout: CLIENT_TIMEOUT_MS,
      resetTimeoutOnProgress: true,
      onprogress: (p) => {
        ticks += 1;
        assert.equal(p.total, 75);
        if (ticks * 200 > CLIENT_TIMEOUT_MS + 1_000) outlived();
      },
    }) as Promise<CallToolResult>;
    await pastTimeout;
    const sent = await call<{ id: string }>(bob, 'mbx_send', { to: ['ann'], subject: 'at last', body: 'b' });
    const woke = await waiting;
    assert.notEqual(woke.isError, true, JSON.stringify(woke.content));
    const data = woke.structuredContent as { mail: boolean; messages: Msg[] };
    assert.deepEqual([data.mail, data.messages.map((m) => m.id)], [true, [sent.id]], "the wait completed with the mail, past the client's own timeout");
  } finally {
    await ann.close();
    await bob.close();
  }
});

test('a server that cannot serve completes the handshake and answers each call with the reason and the fix', { timeout: E2E_TIMEOUT_MS }, async () => {
  const homeless: CliHost = { name: 'none', env: { MBX_HOME: join(tempDir('mbx-mcp-'), 'no-home') }, daemon: null, url: '', place: LOOPBACK };
  const broken = await newCliHost('gamma', []);
  writeFileSync(join(broken.env.MBX_HOME as string, 'host.db'), 'not a database, but forty bytes of text.'.repeat(200));
  const cases: Array<[CliHost, string | null, RegExp]> = [
    [homeless, 'ann', /^no host at .*no-home: run agentmbx init --host <name>, or set MBX_HOME to the home of an existing host$/],
    [
      broken,
      'ann',
      /^cannot open the host store .*host\.db: file is not a database; stop the daemon, move the file aside .* put back your last copy of it; without one, .* must pair again$/,
    ],
    [{ ...homeless, env: { ...homeless.env, MBX_AGENT: '' } }, null, /^no agent: give --agent NAME or set MBX_AGENT in this MCP server's config$/],
  ];
  for (const [host, agent, reason] of cases) {
    const session = await startMcp(host, agent).catch((err: unknown) => assert.fail(`the handshake completes: ${String(err)}`));
    try {
      const tools = (await session.client.listTools()).tools.map((t) => t.name);
      assert.deepEqual(tools, [...MAIL_TOOL_NAMES], 'the tools are listed');
      for (const name of ['mbx_inbox', 'mbx_send']) {
        const r = (await session.client.callTool({ name, arguments: {} })) as CallToolResult;
        assert.equal(r.isError, true);
        const text = (r.content[0] as { text: string }).text;
        assert.match(text.replace(/^agentmbx cannot serve: /, ''), reason, `${name}: ${text}`);
        assert.ok(text.startsWith('agentmbx cannot serve: '), text);
      }
      assert.match(session.client.getInstructions() ?? '', /^agentmbx cannot serve this session: /);
      assert.match(session.stderr(), /^agentmbx: .+\n$/, 'the reason is logged on stderr, one line');
    } finally {
      await session.close();
    }
  }
});
