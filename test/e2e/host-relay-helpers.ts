// Two CLI homes paired on the LAN earlier whose addresses no longer reach each other, and a relay
// child process both are pointed at.
import { spawnRelay, type RelayProcess } from '../helpers/relay-process.ts';
import { tempDir, type Child } from '../helpers/processes.ts';
import { cli, cliJson, newCliHost, startCliDaemon, type CliHost } from './host-helpers.ts';

/** A LAN address nothing listens on. */
export const CLOSED_ADDR = 'http://127.0.0.1:9';

export interface RelayedPair {
  relayDir: string;
  relay: RelayProcess;
  alpha: CliHost;
  beta: CliHost;
  da: Child;
  db: Child;
}

/**
 * beta joins alpha telling it a closed port, then both daemons move to other ports (so beta's
 * pinned address for alpha is closed too, and nothing either learned of the other works); both
 * run `relay set` with the relay's fingerprint (and `setArgs`) and wait until their daemons say
 * the relay is ready.
 */
export async function relayedPair(relayOptions: { failpoint?: string; args?: string[] } = {}, setArgs: string[] = []): Promise<RelayedPair> {
  const relayDir = tempDir('mbx-e2e-relay-');
  const relay = await spawnRelay(relayDir, relayOptions);
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  const first = await startCliDaemon(alpha);
  const firstB = await startCliDaemon(beta);
  const { token } = await cliJson<{ token: string }>(alpha, ['pair']);
  await cli(beta, ['join', alpha.url, token, '--my-addr', CLOSED_ADDR]);
  // Both daemons move to new ports: the addresses each side could have learned of the other (from
  // a verified call's x-mbx-port, or a beacon) are dead too, so no presence probe finds a LAN path.
  for (const old of [first, firstB]) {
    old.kill('SIGTERM');
    await old.exited;
  }
  alpha.url = '';
  beta.url = '';
  const da = await startCliDaemon(alpha);
  const db = await startCliDaemon(beta);
  for (const host of [alpha, beta]) await cli(host, ['relay', 'set', relay.url, '--key', relay.fingerprint, ...setArgs]);
  await da.waitForLine(/relay ready: /);
  await db.waitForLine(/relay ready: /);
  return { relayDir, relay, alpha, beta, da, db };
}

export async function send(host: CliHost, from: string, to: string, subject: string): Promise<string> {
  return (await cli(host, ['send', '--from', from, '--to', to, '--subject', subject, '--body', `body of ${subject}`])).trim();
}
