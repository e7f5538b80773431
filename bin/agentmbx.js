#!/usr/bin/env node
// Launcher for the `agentmbx` command. The code needs Node 24 (node:sqlite, type stripping); the
// project pins it through the npm package `node`. When started by an older Node on the PATH, run
// the pinned one instead and forward signals and the exit status.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const main = join(here, '..', 'src', 'cli', 'main.ts');
const major = Number(process.versions.node.split('.')[0]);

if (major >= 24) {
  await import(main);
} else {
  const pinned = join(here, '..', 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(pinned)) {
    process.stderr.write('agentmbx: needs Node.js 24 or newer (run `npm ci` in the agentmbx folder)\n');
    process.exit(2);
  }
  const child = spawn(pinned, ['--disable-warning=ExperimentalWarning', main, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
}
