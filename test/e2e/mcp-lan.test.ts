// End to end: the SDK's Client spawns the real `agentmbx mcp` for an agent on each of two hosts
// paired on the LAN (loopback), and the agents write, wake, read, ack, reply, search and get refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { runCli, tempDir } from '../helpers/processes.ts';
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

test('a store that cannot be opened ends the server with a one-line reason', { timeout: E2E_TIMEOUT_MS }, async () => {
  const missing = await runCli(['mcp', '--agent', 'ann'], { MBX_HOME: join(tempDir('mbx-mcp-'), 'no-home') });
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /^agentmbx: .+\n$/);
  assert.equal(missing.stdout, '', 'nothing on the protocol channel');
  const host = await newCliHost('gamma', []);
  const badName = await runCli(['mcp', '--agent', 'Not A Name'], host.env);
  assert.equal(badName.code, 2);
  assert.match(badName.stderr, /^agentmbx: bad agent name "Not A Name": .+\n$/);
  const noName = await runCli(['mcp'], { ...host.env, MBX_AGENT: '' });
  assert.equal(noName.code, 2);
  assert.match(noName.stderr, /^agentmbx: no agent: give --agent NAME or set MBX_AGENT\n$/);
});
