// The relay binds its port before it takes the writer lock or opens the store, and holds it from
// then on: nothing can take the port between the check and the serving (bound-port.ts).
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { DEFAULT_CONFIG } from '../../src/relay/config.ts';
import { startRelayService } from '../../src/relay/relay-service.ts';
import { closedPort } from '../helpers/ports.ts';
import { tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { waitUntil, withDeadline } from '../helpers/wait.ts';

/** The listen error another program gets on `port`, or null when it could listen there. */
async function listenError(port: number): Promise<string | null> {
  const other = createServer();
  return new Promise((resolve) => {
    other.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    other.listen(port, '127.0.0.1', () => other.close(() => resolve(null)));
  });
}

test('a relay waiting for the store holds its port already and answers 503 "starting" there, then serves', async (t) => {
  const dir = tempDir('agentmbx-bound-');
  const holder = await spawnRelay(dir); // another relay process has the store
  const port = await closedPort();
  // its own log lines are kept, not printed, as for every in-process test relay (relay-fixture.ts)
  const log: string[] = [];
  const waiting = startRelayService({
    storeDir: dir,
    bind: '127.0.0.1',
    port,
    config: DEFAULT_CONFIG,
    env: {},
    lockWaitMs: 60_000,
    log: (line) => {
      log.push(line);
    },
  });
  t.after(async () => (await waiting).close());
  const url = `http://127.0.0.1:${port}`;
  let early: { status: number; retryAfter: string | null; body: unknown } | null = null;
  await waitUntil('the waiting relay to bind its port', 10_000, async () => {
    try {
      const response = await fetch(`${url}/v2/relay/info`);
      early = { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() };
      return null;
    } catch (error) {
      return String((error as Error).cause ?? error);
    }
  });
  assert.deepEqual(early, { status: 503, retryAfter: '1', body: { error: 'the relay is starting: try again shortly' } });
  assert.equal(await listenError(port), 'EADDRINUSE', 'the port is held while the relay waits for the store');

  holder.child.kill('SIGTERM');
  assert.equal(await holder.child.exited, 0);
  const service = await withDeadline('the waiting relay to start', 10_000, waiting);
  assert.equal(service.url, url);
  assert.equal(service.epoch, holder.epoch, 'the same store');
  assert.equal((await fetch(`${url}/v2/relay/info`)).status, 200);
});
