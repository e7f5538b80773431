// The tools as a client lists them from the real `agentmbx mcp`: every tool says what it does to
// the world (annotations clients use to decide whether a call needs approval), and every limit of
// its input schema is restated in its description (Codex drops maxLength/maximum/maxItems).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E2E_TIMEOUT_MS, newCliHost } from './host-helpers.ts';
import { startMcp } from './mcp-helpers.ts';

const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

test('every tool carries honest annotations and restates its schema limits', { timeout: E2E_TIMEOUT_MS }, async () => {
  const host = await newCliHost('alpha', []);
  const agent = await startMcp(host, 'ann');
  const { tools } = await agent.client.listTools();
  await agent.close();
  assert.ok(tools.length >= 10, 'the mail tools are listed');
  for (const tool of tools) {
    const a = tool.annotations ?? {};
    assert.equal(typeof a.readOnlyHint, 'boolean', `${tool.name} says whether it only reads`);
    assert.equal(typeof a.openWorldHint, 'boolean', `${tool.name} says whether it reaches outside the mail system`);
    // the spec reads a missing destructiveHint as true: a tool that writes must say it
    if (a.readOnlyHint !== true) for (const hint of HINTS) assert.equal(typeof a[hint], 'boolean', `${tool.name} sets ${hint}`);
    for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
      const s = schema as Record<string, unknown>;
      for (const key of ['maxLength', 'maxItems', 'maximum']) {
        if (typeof s[key] === 'number')
          assert.match(tool.description ?? '', new RegExp(`${field} at most ${s[key]}\\b`), `${tool.name} restates ${field}'s ${key}`);
      }
    }
  }
  const byName = new Map(tools.map((t) => [t.name, t.annotations ?? {}]));
  for (const reader of ['mbx_search', 'mbx_thread', 'mbx_agents', 'mbx_status']) assert.equal(byName.get(reader)?.readOnlyHint, true, `${reader} only reads`);
  // listing and reading move the delivery state the sender sees: not read-only
  for (const mover of ['mbx_inbox', 'mbx_read', 'mbx_ack', 'mbx_wait']) {
    assert.deepEqual(byName.get(mover), {
      title: byName.get(mover)?.title,
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    });
  }
  assert.equal(byName.get('mbx_send')?.openWorldHint, true, 'sending reaches other agents');
  assert.equal(byName.get('mbx_send')?.idempotentHint, false, 'each send without a key is new mail');
  const send = tools.find((t) => t.name === 'mbx_send');
  assert.match(send?.description ?? '', /subject at most 200 characters/);
  assert.match(send?.description ?? '', /body at most 256 KiB/);
});
