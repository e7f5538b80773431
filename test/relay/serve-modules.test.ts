// A relay on a SQLite store keeps in memory only what it runs (docs/relay-operator.md "Memory"):
// `agentmbx relay serve` loads none of the host's code (daemon, MCP server and their libraries), not
// the PostgreSQL driver, not the JWT library of account tokens and not Node's fetch client (undici),
// in any process of a group, and a group's primary, which serves no HTTP, loads neither fastify nor
// pino. Every module loaded is recorded in each process (helpers/loaded-modules.ts), and Node's own
// in a run of its own (node-internals-recorder.ts: the module hooks of the first load undici).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { REPO_ROOT, spawnCli, tempDir } from '../helpers/processes.ts';

const RECORDER = join(REPO_ROOT, 'test', 'helpers', 'loaded-modules.ts');
const INTERNALS_RECORDER = join(import.meta.dirname, 'node-internals-recorder.ts');

/** Loaded modules that a SQLite relay without account tokens has no use for: the host's code, the PostgreSQL driver, the JWT library. */
const NOT_FOR_A_SQLITE_RELAY = [
  /\/src\/(host|mcp|setup|ui)\//,
  /\/src\/cli\/(host|mail|mcp|daemon)\.ts$/,
  /\/node_modules\/(pg|pg-[a-z-]+|zod|@modelcontextprotocol|jose)\//,
  /\/src\/relay\/store\/postgres\//,
];

/** Runs `relay serve --workers 2` on a fresh SQLite store with `preload` and `env`, and stops it; returns the primary's pid. */
async function serveGroupOnce(preload: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { NODE_OPTIONS: _options, ...inherited } = process.env;
  const child = spawnCli(['relay', 'serve', '--store-dir', tempDir('agentmbx-modules-store-'), '--port', '0', '--workers', '2'], {
    env: { ...inherited, ...env, NODE_OPTIONS: `--import ${preload}` },
  });
  await child.waitForLine(/agentmbx relay listening on/);
  child.process.kill('SIGTERM');
  assert.equal(await child.exited, 0);
  return child.process.pid as number;
}

/** What each process of the group wrote to `dir` (one `<pid>.txt` each), one entry a line. */
function recordedBy(dir: string): Array<{ pid: number; lines: string[] }> {
  return readdirSync(dir).map((file) => ({ pid: Number(file.replace('.txt', '')), lines: readFileSync(join(dir, file), 'utf8').split('\n') }));
}

test("relay serve --workers 2 on a SQLite store loads neither pg, jose nor the host's modules; its primary neither fastify nor pino", {
  timeout: 60_000,
}, async () => {
  const recorded = tempDir('agentmbx-modules-');
  const primary = await serveGroupOnce(RECORDER, { AGENTMBX_LOADED_MODULES_DIR: recorded });
  const processes = recordedBy(recorded).map(({ pid, lines }) => ({ pid, modules: lines }));
  assert.equal(processes.length, 3, 'the primary and two workers each recorded their modules');
  for (const { pid, modules } of processes) {
    // the recorder works: each process loaded the relay's store
    assert.ok(
      modules.some((url) => url.endsWith('/src/relay/store/open-relay-store.ts')),
      `pid ${pid}`,
    );
    const unneeded = modules.filter((url) => NOT_FOR_A_SQLITE_RELAY.some((pattern) => pattern.test(url)));
    assert.deepEqual(unneeded, [], `pid ${pid} (${pid === primary ? 'primary' : 'worker'})`);
    for (const library of ['fastify', 'pino']) {
      const loaded = modules.some((url) => url.includes(`/node_modules/${library}/`));
      assert.equal(loaded, pid !== primary, `${library} loaded in pid ${pid} (${pid === primary ? 'primary' : 'worker'})`);
    }
  }
});

test("no process of relay serve --workers 2 loads Node's fetch client (undici), which an ES import of node:http would", { timeout: 60_000 }, async () => {
  const recorded = tempDir('agentmbx-internals-');
  await serveGroupOnce(INTERNALS_RECORDER, { AGENTMBX_NODE_INTERNALS_DIR: recorded });
  const processes = recordedBy(recorded);
  assert.equal(processes.length, 3, 'the primary and two workers each recorded their modules');
  for (const { pid, lines } of processes) {
    // the recorder works: each process loaded node:http (src/common/node-http.ts)
    assert.ok(lines.includes('NativeModule http'), `pid ${pid}`);
    assert.deepEqual(
      lines.filter((name) => name.includes('undici')),
      [],
      `pid ${pid}`,
    );
  }
});
