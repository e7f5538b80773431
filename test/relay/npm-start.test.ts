// `npm start` execs the relay (issue 25): the script's shell is replaced by node, so npm's child is
// the relay itself and a SIGTERM to npm's pid (npm passes it on) stops the relay and frees its port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { REPO_ROOT, spawnProcess, tempDir } from '../helpers/processes.ts';

const READY = /agentmbx relay listening on (\S+) fingerprint/;

test('a SIGTERM to the pid of `npm start` stops the relay and frees its port', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env['MBX_RELAY_KEY'];
  const npm = spawnProcess(
    ['npm', 'start', '--silent', '--', '--store-dir', tempDir('agentmbx-npm-start-'), '--port', '0', '--bind', '127.0.0.1', '--workers', '1'],
    { cwd: REPO_ROOT, env },
  );
  const url = READY.exec(await npm.waitForLine(READY))?.[1] ?? assert.fail('no URL');
  assert.equal((await fetch(`${url}/v2/relay/info`)).status, 200);
  process.kill(npm.process.pid ?? assert.fail('no pid'), 'SIGTERM'); // npm's own pid, not its group
  await npm.exited;
  await assert.rejects(fetch(`${url}/v2/relay/info`), 'the relay is gone: nothing listens on its port');
});
