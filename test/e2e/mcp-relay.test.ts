// The agents' MCP flow again, with the two hosts unable to reach each other on the LAN: all mail,
// receipts and wake-ups go through a relay child process.
import { test } from 'node:test';
import { E2E_TIMEOUT_MS } from './host-helpers.ts';
import { relayedPair } from './host-relay-helpers.ts';
import { runAgentsMailFlow } from './mcp-helpers.ts';

test('two agents whose hosts only meet at a relay use their mailboxes over MCP', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { alpha, beta } = await relayedPair();
  await runAgentsMailFlow({ host: alpha, agent: 'ann' }, { host: beta, agent: 'bob' });
});
