// End to end: the SDK's Client spawns the real `agentmbx mcp` for an agent on each of two hosts
// paired on the LAN (loopback), and the agents write, wake, read, ack, reply, search and get refused.
import { test } from 'node:test';
import { E2E_TIMEOUT_MS, newCliHost, pairCli, startCliDaemon } from './host-helpers.ts';
import { runAgentsMailFlow } from './mcp-helpers.ts';

test('two agents on paired LAN hosts use their mailboxes over MCP', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', []);
  const beta = await newCliHost('beta', ['bob']);
  await startCliDaemon(alpha);
  await startCliDaemon(beta);
  await pairCli(alpha, beta);
  // ann does not exist yet: the server creates her.
  await runAgentsMailFlow({ host: alpha, agent: 'ann' }, { host: beta, agent: 'bob' });
});
