// One running relay: the writer lock, the relay key, the store, the core and the HTTP face,
// started in that order and stopped in reverse. `agentmbx relay serve` and the tests use it.
import { createRequire } from 'node:module';
import { fingerprint } from '../protocol/fingerprint.ts';
import type { EnrolmentAuthority } from './authority/enrolment-authority.ts';
import type { RelayConfig } from './config.ts';
import { createRelayCore, type RelayCore } from './core/relay-core.ts';
import { buildRelayHttp } from './http/server.ts';
import { loadOrCreateRelayKey } from './ops/relay-key.ts';
import { acquireWriterLock } from './ops/writer-lock.ts';
import { openSqliteRelayStore } from './store/sqlite/index.ts';

export const RELAY_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export interface RelayServiceOptions {
  storeDir: string;
  port: number;
  bind: string;
  config: RelayConfig;
  env: NodeJS.ProcessEnv;
  authority?: EnrolmentAuthority;
  nowMs?: () => number;
  /** how long to wait for another relay process to release the store (0: refuse at once) */
  lockWaitMs?: number;
}

export interface RelayService {
  url: string;
  epoch: string;
  relayPubkey: string;
  fingerprint: string;
  core: RelayCore;
  /** stops accepting, finishes requests in flight, closes the store, releases the lock */
  close(): Promise<void>;
}

export async function startRelayService(options: RelayServiceOptions): Promise<RelayService> {
  const lock = await acquireWriterLock(options.storeDir, { waitMs: options.lockWaitMs ?? 0 });
  const cleanups: Array<() => Promise<void> | void> = [() => lock.release()];
  const unwind = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  };
  try {
    const relayKey = loadOrCreateRelayKey(options.storeDir, options.env);
    const store = await openSqliteRelayStore({ dir: options.storeDir, relayPubkey: relayKey.publicKey, ...(options.nowMs ? { nowMs: options.nowMs } : {}) });
    cleanups.push(() => store.close());
    const core = await createRelayCore({
      store, relayKey, config: options.config, version: RELAY_VERSION,
      ...(options.authority ? { authority: options.authority } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });
    const app = buildRelayHttp(core, options.config);
    cleanups.push(() => app.close());
    await app.listen({ port: options.port, host: options.bind });
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    const host = options.bind.includes(':') ? `[${options.bind}]` : options.bind;
    return {
      url: `http://${host}:${port}`,
      epoch: core.context.epoch,
      relayPubkey: relayKey.publicKey,
      fingerprint: fingerprint(relayKey.publicKey),
      core,
      close: unwind,
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}
