// A relay on a SQLite store keeps in memory only what it runs (docs/relay-operator.md "Memory"):
// `agentmbx relay serve` loads none of the host's code (daemon, MCP server and their libraries) and
// not the PostgreSQL driver, in any process of a group, and a group's primary, which serves no
// HTTP, loads no fastify. Every module loaded is recorded in each process (helpers/loaded-modules.ts).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, spawnCli, tempDir } from '../helpers/processes.ts';

const RECORDER = join(REPO_ROOT, 'test', 'helpers', 'loaded-modules.ts');

/** Loaded modules that a SQLite relay has no use for: the host's code and the PostgreSQL driver. */
const NOT_FOR_A_SQLITE_RELAY = [
  /\/src\/(host|mcp|setup|ui)\//,
  /\/src\/cli\/(host|mail|mcp|daemon)\.ts$/,
  /\/node_modules\/(pg|pg-[a-z-]+|zod|@modelcontextprotocol)\//,
  /\/src\/relay\/store\/postgres\//,
];

test("relay serve --workers 2 on a SQLite store loads neither pg nor the host's modules; its primary no fastify", { timeout: 60_000 }, async () => {
  const recorded = tempDir('agentmbx-modules-');
  const { NODE_OPTIONS: _options, ...env } = process.env;
  const child = spawnCli(['relay', 'serve', '--store-dir', tempDir('agentmbx-modules-store-'), '--port', '0', '--workers', '2'], {
    env: { ...env, NODE_OPTIONS: `--import ${RECORDER}`, AGENTMBX_LOADED_MODULES_DIR: recorded },
  });
  await child.waitForLine(/agentmbx relay listening on/);
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);
  const primary = child.process.pid as number;
  const processes = readdirSync(recorded).map((file) => ({
    pid: Number(file.replace('.txt', '')),
    modules: readFileSync(join(recorded, file), 'utf8').split('\n'),
  }));
  assert.equal(processes.length, 3, 'the primary and two workers each recorded their modules');
  for (const { pid, modules } of processes) {
    // the recorder works: each process loaded the relay's store
    assert.ok(
      modules.some((url) => url.endsWith('/src/relay/store/open-relay-store.ts')),
      `pid ${pid}`,
    );
    const unneeded = modules.filter((url) => NOT_FOR_A_SQLITE_RELAY.some((pattern) => pattern.test(url)));
    assert.deepEqual(unneeded, [], `pid ${pid} (${pid === primary ? 'primary' : 'worker'})`);
    const fastify = modules.some((url) => url.includes('/node_modules/fastify/'));
    assert.equal(fastify, pid !== primary, `fastify loaded in pid ${pid} (${pid === primary ? 'primary' : 'worker'})`);
  }
});
