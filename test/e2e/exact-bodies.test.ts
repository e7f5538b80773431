// Bodies are carried exactly or refused (issue 25): every Unicode text, U+0000, every C0 control and
// astral characters included, comes back byte for byte over the LAN and through a relay, in
// `read --json`, mbx_read, threads (the sender's own copy too) and search; bytes that are not UTF-8
// (stdin, a file) and an MCP string with a lone surrogate are refused with nothing stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnCli, tempDir } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, cliJson, newCliHost, pairCli, startCliDaemon, inboxMessages, type CliHost } from './host-helpers.ts';
import { relayedPair } from './host-relay-helpers.ts';
import { call, eventually, refused, startMcp } from './mcp-helpers.ts';

const C0 = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('');
/** A byte-order mark first (a decoder must not eat it), every C0 control, U+0000 in the middle and at the end, astral characters. */
const EXACT_BODY = `\uFEFFbom ${C0} del\u007f nul\u0000mid astral \u{1F600}\u{1D11E}\u{10FFFF} sep\u2028 zwj\u{1F469}\u200D\u{1F4BB}\r\nend\u0000`;

interface Msg {
  id: string;
  body?: string;
  subject: string;
}

/** `agentmbx send …` with `input` on its stdin, then closed. */
async function sendBytes(host: CliHost, args: string[], input: Uint8Array): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawnCli(['send', ...args], { env: { ...process.env, ...host.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  child.process.stdin?.end(input);
  const code = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

async function outboxEnvelopes(host: CliHost): Promise<unknown> {
  return (await cliJson<{ outbox: Record<string, unknown> }>(host, ['status'])).outbox['envelope'] ?? {};
}

/** Sends EXACT_BODY from ann@alpha to bob@beta by the CLI and by MCP; both read back exactly on both sides. */
async function carriedExactly(alpha: CliHost, beta: CliHost): Promise<void> {
  const viaCli = await sendBytes(alpha, ['--from', 'ann', '--to', 'bob@beta', '--subject', 'exact by cli'], Buffer.from(EXACT_BODY, 'utf8'));
  assert.equal(viaCli.code, 0, viaCli.stderr);
  const cliId = viaCli.stdout.trim();
  const ann = await startMcp(alpha, 'ann');
  const bob = await startMcp(beta, 'bob');
  try {
    const mcpId = (await call<{ id: string }>(ann, 'mbx_send', { to: ['bob@beta'], subject: 'exact by mcp', body: EXACT_BODY })).id;
    await eventually(
      'both messages reach bob',
      () => inboxMessages<Msg>(beta, 'bob'),
      (list) => [cliId, mcpId].every((id) => list.some((m) => m.id === id)),
    );
    // the recipient: read --json, mbx_read, the thread
    assert.equal((await cliJson<Msg>(beta, ['read', cliId, '--agent', 'bob'])).body, EXACT_BODY, 'read --json');
    const read = await call<{ messages: Msg[] }>(bob, 'mbx_read', { ids: [mcpId] });
    assert.equal(read.messages[0]?.body, EXACT_BODY, 'mbx_read');
    for (const [side, id] of [
      [bob, cliId],
      [bob, mcpId],
      [ann, cliId],
      [ann, mcpId],
    ] as const) {
      const thread = await call<{ messages: Msg[] }>(side, 'mbx_thread', { id });
      assert.equal(thread.messages[0]?.body, EXACT_BODY, "mbx_thread, the sender's own copy included");
    }
    // search sees the words after the U+0000
    for (const side of [ann, bob]) {
      const found = await call<{ messages: Msg[] }>(side, 'mbx_search', { query: 'astral' });
      assert.deepEqual(found.messages.map((m) => m.id).sort(), [cliId, mcpId].sort());
    }
    // a lone surrogate is no text: refused, nothing stored
    const before = await outboxEnvelopes(alpha);
    await refused(ann, 'mbx_send', { to: ['bob@beta'], subject: 'half a pair', body: 'x\uD800y' }, /not Unicode text: a lone surrogate U\+D800 at character 1/);
    assert.deepEqual(await outboxEnvelopes(alpha), before);
  } finally {
    await ann.close();
    await bob.close();
  }
}

test('bodies with U+0000, every C0 control and astral characters go over the LAN byte for byte; bytes that are not UTF-8 are refused', {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  await startCliDaemon(alpha);
  await startCliDaemon(beta);
  await pairCli(alpha, beta);
  await carriedExactly(alpha, beta);

  // bytes that are not UTF-8: refused by offset, nothing stored, and the way to send a file named
  const before = await outboxEnvelopes(alpha);
  const bad = await sendBytes(alpha, ['--from', 'ann', '--to', 'bob@beta', '--subject', 'binary'], Buffer.from('a\u0000b\xff\xfe c', 'latin1'));
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /the body from stdin is not UTF-8 text: byte 3 \(0xff\) is not valid UTF-8; nothing was sent.*--body-file FILE --base64/);
  const binary = join(tempDir('mbx-body-'), 'blob.bin');
  const bytes = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) & 0xff));
  writeFileSync(binary, bytes);
  const badFile = await sendBytes(alpha, ['--from', 'ann', '--to', 'bob@beta', '--subject', 'binary', '--body-file', binary], new Uint8Array());
  assert.equal(badFile.code, 2);
  assert.match(badFile.stderr, /the body from .*blob\.bin is not UTF-8 text: byte \d+ /);
  assert.deepEqual(await outboxEnvelopes(alpha), before, 'nothing was queued');
  // --base64 sends the file as base64 text, which decodes to the same bytes
  const sent = await sendBytes(alpha, ['--from', 'ann', '--to', 'bob@beta', '--subject', 'binary', '--body-file', binary, '--base64'], new Uint8Array());
  assert.equal(sent.code, 0, sent.stderr);
  const id = sent.stdout.trim();
  await eventually(
    'the file reaches bob',
    () => inboxMessages<Msg>(beta, 'bob'),
    (list) => list.some((m) => m.id === id),
  );
  assert.deepEqual(Buffer.from((await cliJson<Msg>(beta, ['read', id, '--agent', 'bob'])).body ?? '', 'base64'), bytes);
});

test('bodies with U+0000, every C0 control and astral characters go through a relay byte for byte', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { alpha, beta } = await relayedPair();
  await carriedExactly(alpha, beta);
});
