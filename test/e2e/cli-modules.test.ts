// A host command starts with only what it runs: `inbox` and the daemon load neither the MCP SDK
// nor its schema libraries (zod, ajv) nor jose (a token relay's), and `inbox` neither the daemon nor
// the owner's page server; those were most of every command's start-up (0.7 → 0.3 s of CPU). `agentmbx
// mcp` loads the SDK when it serves. Agents' hooks and scripts run many short
// commands, and the suite thousands. Every module loaded is recorded per process (helpers/loaded-modules.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, spawnCli, tempDir } from '../helpers/processes.ts';
import { cli, newCliHost, type CliHost } from './host-helpers.ts';

const RECORDER = join(REPO_ROOT, 'test', 'helpers', 'loaded-modules.ts');

/** Libraries only `agentmbx mcp` (and a token relay's client) needs. */
const NOT_FOR_A_SHORT_COMMAND = /\/node_modules\/(@modelcontextprotocol|zod|zod-to-json-schema|ajv|ajv-formats|jose)\//;

/** What only the daemon and `agentmbx ui` run. */
const NOT_FOR_INBOX = /\/src\/(host\/daemon|host\/presence\/keeper|ui\/ui-server)\.ts$/;

/** The modules each process of `run` loaded (one list per process it started). */
async function modulesOf(host: CliHost, run: (recording: CliHost) => Promise<void>): Promise<string[][]> {
  const dir = tempDir('agentmbx-cli-modules-');
  const { NODE_OPTIONS: _options, ...env } = process.env;
  await run({ ...host, env: { ...env, ...host.env, NODE_OPTIONS: `--import ${RECORDER}`, AGENTMBX_LOADED_MODULES_DIR: dir } });
  const lists = readdirSync(dir).map((file) => readFileSync(join(dir, file), 'utf8').split('\n'));
  rmSync(dir, { recursive: true, force: true });
  return lists;
}

test('inbox and the daemon load no MCP SDK, zod, ajv or jose, inbox not the daemon; agentmbx mcp loads the SDK', { timeout: 60_000 }, async () => {
  const host = await newCliHost('modules', ['ann']);
  const [inbox = []] = await modulesOf(host, (h) => cli(h, ['inbox', '--agent', 'ann']).then(() => undefined));
  assert.ok(
    inbox.some((url) => url.endsWith('/src/host/mailbox.ts')),
    'the recorder saw the command run',
  );
  assert.deepEqual(
    inbox.filter((url) => NOT_FOR_A_SHORT_COMMAND.test(url) || NOT_FOR_INBOX.test(url)),
    [],
    'inbox',
  );

  const [daemon = []] = await modulesOf(host, async (h) => {
    const child = spawnCli(['daemon', '--port', '0', '--bind', '127.0.0.1'], { env: h.env });
    await child.waitForLine(/listening on http:\/\//);
    child.kill('SIGTERM');
    await child.exited;
  });
  assert.ok(daemon.length > 0, 'the daemon recorded its modules');
  assert.deepEqual(
    daemon.filter((url) => NOT_FOR_A_SHORT_COMMAND.test(url)),
    [],
    'daemon',
  );

  const [mcp = []] = await modulesOf(host, async (h) => {
    const child = spawnCli(['mcp', '--agent', 'ann'], { env: h.env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.process.stdin?.end();
    await child.exited;
  });
  assert.ok(
    mcp.some((url) => url.includes('/node_modules/@modelcontextprotocol/')),
    'agentmbx mcp serves with the SDK',
  );
});
