// `agentmbx relay restore <file>` (design §5, protocol.md §7.14). Holding the writer lock (so it is
// refused while a relay serves the store, and no relay starts meanwhile), it stages a copy of the
// backup, refuses anything that is not a healthy relay store of this relay's key at a schema this
// binary knows, upgrades it, folds in from the live store what only ever restricts, writes a new
// epoch (senders re-push, receivers re-pull), logs the restore, and only then swaps it in: the live
// relay.db stays beside it as a rollback copy (a hard link, taken before the atomic rename).
import { randomBytes } from 'node:crypto';
import { chmodSync, constants, copyFileSync, existsSync, linkSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { NotARelayStoreError, StoreOpenError, StoreSchemaTooNewError } from '../store/errors.ts';
import { openRelayStore, readRelayStoreMeta, storeBackendOf } from '../store/open-relay-store.ts';
import { randomEpoch } from '../store/random-epoch.ts';
import { carryForward, checkIntegrity, RELAY_DB_FILE, settleWal, type CarriedForward } from '../store/store-files.ts';
import type { StoreMeta } from '../store/relay-store.ts';
import { fsyncPath } from '../../common/fsync-path.ts';
import { lockForOfflineOperation, RelayOpsError } from './ops-error.ts';
import { loadOrCreateRelayKey, RELAY_KEY_FILE } from './relay-key.ts';

export interface RestoreReceipt {
  restored_from: string;
  /** the replaced relay.db, kept for a rollback; null when there was no live store */
  rollback: string | null;
  epoch: string;
  previous_epoch: string | null;
  backup_epoch: string;
  /** what came over from the live store; null when there was none */
  carried_forward: CarriedForward | null;
}

export interface RestoreOptions {
  storeDir: string;
  file: string;
  env: NodeJS.ProcessEnv;
  nowMs?: () => number;
  newEpoch?: () => string;
}

export async function restoreRelayStore(options: RestoreOptions): Promise<RestoreReceipt> {
  const file = resolve(options.file);
  storeBackendOf(options.storeDir); // a SQLite store: these steps work on its files
  const dir = resolve(options.storeDir);
  if (!existsSync(file)) throw new RelayOpsError(`${file} does not exist`);
  const lock = await lockForOfflineOperation(dir, 'stop it before restoring');
  const staging = join(dir, `.restore-${randomBytes(6).toString('hex')}`);
  try {
    const liveDb = join(dir, RELAY_DB_FILE);
    const live = existsSync(liveDb) ? await readLiveMeta(dir) : null;
    const relayPubkey = relayPubkeyFor(dir, options.env, live);
    if (live !== null && live.relayPubkey !== relayPubkey) {
      throw new RelayOpsError(
        `the live store in ${dir} belongs to relay key ${fingerprint(live.relayPubkey)}, not to this relay's key ${fingerprint(relayPubkey)}`,
      );
    }

    mkdirSync(staging, { mode: 0o700 });
    const staged = join(staging, RELAY_DB_FILE);
    copyFileSync(file, staged, constants.COPYFILE_EXCL);
    chmodSync(staged, 0o600);
    const backup = await checkBackup(file, staging, staged, relayPubkey);
    const nowMs = (options.nowMs ?? Date.now)();
    const epoch = (options.newEpoch ?? randomEpoch)();
    const store = await openRelayStore({ location: staging, relayPubkey }); // upgrades an older schema
    let carried: CarriedForward | null = null;
    try {
      carried = live === null ? null : carryForward(staging, dir);
      await store.transaction(async (tx) => {
        await tx.meta.setEpoch(epoch);
        // the relay's start-up check must not count the backup's old heartbeat as an outage
        await tx.meta.writeHeartbeat(nowMs);
        await tx.meta.appendOpsLog({
          at: nowMs,
          kind: 'restore',
          detail: { file, backup_epoch: backup.epoch, previous_epoch: live?.epoch ?? null, epoch, carried_forward: carried },
        });
      });
    } finally {
      await store.close();
    }
    settleWal(staging);
    fsyncPath(staged);

    let rollback: string | null = null;
    if (live !== null) {
      settleWal(dir);
      rollback = keepRollbackCopy(liveDb, nowMs);
    }
    renameSync(staged, liveDb);
    fsyncPath(dir);
    return { restored_from: file, rollback, epoch, previous_epoch: live?.epoch ?? null, backup_epoch: backup.epoch, carried_forward: carried };
  } finally {
    rmSync(staging, { recursive: true, force: true });
    lock.release();
  }
}

/** The live store's meta; a store that cannot be read is refused with what to do (nothing is guessed). */
async function readLiveMeta(dir: string): Promise<StoreMeta> {
  try {
    return await readRelayStoreMeta(dir);
  } catch (error) {
    if (!(error instanceof StoreOpenError)) throw error;
    throw new RelayOpsError(`${error.message}; to restore without carrying anything forward from it, move the relay.db files out of ${dir} first`);
  }
}

/** The relay's public key: MBX_RELAY_KEY, else relay.key, else the live store's; never creates a key. */
function relayPubkeyFor(dir: string, env: NodeJS.ProcessEnv, live: StoreMeta | null): string {
  if (env.MBX_RELAY_KEY !== undefined || existsSync(join(dir, RELAY_KEY_FILE))) return loadOrCreateRelayKey(dir, env).publicKey;
  if (live !== null) return live.relayPubkey;
  throw new RelayOpsError(`no relay key: set MBX_RELAY_KEY or put the relay's ${RELAY_KEY_FILE} in ${dir} before restoring`);
}

/** Refuses a backup that is not a healthy store of `relayPubkey` at a schema this binary knows; returns its meta. */
async function checkBackup(file: string, staging: string, staged: string, relayPubkey: string): Promise<StoreMeta> {
  let meta: StoreMeta;
  try {
    checkIntegrity(staged, `${file}`);
    meta = await readRelayStoreMeta(staging);
  } catch (error) {
    if (error instanceof StoreSchemaTooNewError) throw new RelayOpsError(`${file}: ${error.message}`);
    if (error instanceof NotARelayStoreError) throw new RelayOpsError(`${file} is not a relay store`);
    if (error instanceof StoreOpenError) throw new RelayOpsError(error.message);
    throw error;
  }
  if (meta.relayPubkey !== relayPubkey) {
    throw new RelayOpsError(`${file} is a backup of relay key ${fingerprint(meta.relayPubkey)}, not of this relay's key ${fingerprint(relayPubkey)}`);
  }
  return meta;
}

/** Hard-links the live relay.db to relay.db.before-restore-<time>[-n]; returns that path. */
function keepRollbackCopy(liveDb: string, nowMs: number): string {
  const stamp = new Date(nowMs).toISOString().replace(/[:.]/g, '-');
  for (let n = 0; ; n += 1) {
    const path = `${liveDb}.before-restore-${stamp}${n === 0 ? '' : `-${n}`}`;
    try {
      linkSync(liveDb, path);
      return path;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
