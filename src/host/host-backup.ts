// `agentmbx backup FILE` and `agentmbx restore FILE` (docs/host.md, "Backup and restore"). A backup is
// SQLite's online backup of host.db, safe while the daemon runs: one self-contained file (no -wal),
// integrity-checked, fsynced, 0600, linked to its name (never over an existing file). The keys are
// not in it: the receipt names the files the home needs beside it (they change only at `host rotate`).
// A restore is refused while the daemon runs; it checks that the backup is a healthy store of this
// home's host key, keeps the live store as a rollback copy, then copies the backup into host.db with
// the backup API (so a connection still open elsewhere sees one whole store, never a swapped file).
import { randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, linkSync, lstatSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import { fsyncPath } from '../common/fsync-path.ts';
import { createPrivateFile } from '../common/private-file.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { acquireDaemonLock, runningDaemonPid } from './daemon-lock.ts';
import { HostError } from './core/host-error.ts';
import { homePaths, loadSigningKey, readConfig } from './core/identity.ts';
import type { HostNode } from './core/node.ts';
import { homeHostKeys } from './store-guard.ts';
import { StoreError } from './store/database.ts';
import { HostStore, META_HOST_PUB } from './store/host-store.ts';

export class BackupError extends HostError {}

/** Meta of a backup file: when it was taken (ISO); a restore reads it and takes it out of the live store. */
export const META_BACKUP_TAKEN_AT = 'backup_taken_at';

export interface StoreSummary {
  host_fingerprint: string;
  schema_version: number;
  messages: number;
  outbox_rows: number;
}

export interface HostBackupReceipt extends StoreSummary {
  file: string;
  time: string;
  bytes: number;
  /** the files of the home the backup does not hold, which a restore needs beside it */
  not_included: string[];
}

export interface HostRestoreReceipt extends StoreSummary {
  restored_from: string;
  /** when the backup was taken (ISO); null for a backup made before agentmbx recorded it */
  taken_at: string | null;
  /** the replaced host.db, kept for a rollback; null when there was none */
  rollback: string | null;
  /** what the replaced store holds and the backup does not; null when there was no replaced store, or it could not be read */
  not_restored: NotRestored | null;
}

/** Mail of the replaced store that the restored backup lacks. */
export interface NotRestored {
  /** messages in this host's mailboxes (received from peers, or between its own agents): gone from them */
  mailbox_messages: number;
  /** messages written here for peers whose copy had not left yet (queued): no peer has them */
  unsent_messages: number;
}

/** Backs the node's store up to `file` (which must not exist) while the daemon may be writing. */
export async function backupHost(node: HostNode, file: string): Promise<HostBackupReceipt> {
  const target = resolve(file);
  const dir = dirname(target);
  if (existsSync(target)) throw new BackupError(`${target} already exists: a backup never overwrites a file; pick a new name`);
  const temp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    createPrivateFile(temp);
  } catch (err) {
    throw new BackupError(`cannot write in ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    await node.store.db.backupTo(temp);
    const summary = withStoreFile(temp, (db) => {
      // one self-contained file: a rollback journal, not a WAL beside it
      db.exec('PRAGMA journal_mode = DELETE');
      db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(META_BACKUP_TAKEN_AT, new Date(node.nowMs()).toISOString());
      return summarize(db, `the backup copy ${temp}`);
    });
    fsyncPath(temp);
    try {
      linkSync(temp, target);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new BackupError(`${target} appeared while the backup ran: it was left alone`);
      throw err;
    }
    fsyncPath(dir);
    const paths = homePaths(node.home);
    return {
      file: target,
      time: new Date(node.nowMs()).toISOString(),
      bytes: statSync(target).size,
      ...summary,
      not_included: [paths.config, paths.keysDir],
    };
  } finally {
    removeDatabaseFiles(temp);
  }
}

/** Restores `file` into the home's store; refused while the daemon runs (its lock is held meanwhile). */
export async function restoreHost(home: string, file: string, nowMs: number): Promise<HostRestoreReceipt> {
  readConfig(home);
  const source = resolve(file);
  if (!existsSync(source)) throw new BackupError(`${source} does not exist`, 'not-found');
  const pid = runningDaemonPid(home);
  if (pid !== null) throw new BackupError(`the daemon of this home runs (pid ${pid}): stop it before restoring, then start it again`);
  const release = acquireDaemonLock(home);
  const paths = homePaths(home);
  const staged = join(home, `.restore-${randomBytes(6).toString('hex')}.db`);
  try {
    createPrivateFile(staged);
    copyFileSync(source, staged);
    chmodSync(staged, 0o600);
    const { summary, takenAt } = checkBackup(home, source, staged);
    const rollback = await keepRollbackCopy(paths.store, nowMs);
    const notRestored = rollback === null ? null : notRestoredMail(staged, rollback);
    createPrivateFile(paths.store);
    const from = new DatabaseSync(staged, { readOnly: true });
    try {
      await backup(from, paths.store, { rate: -1 });
    } finally {
      from.close();
    }
    fsyncPath(paths.store);
    return { restored_from: source, taken_at: takenAt, rollback, not_restored: notRestored, ...summary };
  } finally {
    removeDatabaseFiles(staged);
    release();
  }
}

/**
 * Refuses a backup that is not a healthy host store of this home's host key (current or retired) at a
 * schema this binary knows; upgrades an older one, and records the current host key in it.
 */
function checkBackup(home: string, source: string, staged: string): { summary: StoreSummary; takenAt: string | null } {
  let store: HostStore;
  try {
    store = HostStore.open(staged);
  } catch (err) {
    throw new BackupError(`${source} is not a host store backup: ${err instanceof Error ? err.message.replaceAll(staged, 'it') : String(err)}`);
  }
  try {
    const integrity = store.quickCheck();
    if (integrity !== 'ok') throw new BackupError(`${source} is damaged: ${integrity}`);
    const owner = store.getMeta(META_HOST_PUB);
    const mine = homeHostKeys(home);
    if (owner === undefined || !mine.has(owner)) {
      throw new BackupError(
        `${source} is a backup of ${owner === undefined ? 'no host' : `host key ${fingerprint(owner)}`}, not of this home's host (${fingerprint(loadSigningKey(homePaths(home).hostKey).publicKey)})`,
      );
    }
    // a backup from before a `host rotate` belongs to this host too: it now runs under the current key
    store.setMeta(META_HOST_PUB, loadSigningKey(homePaths(home).hostKey).publicKey);
  } finally {
    store.close();
  }
  return withStoreFile(staged, (db) => {
    // when it was taken describes the backup file, not the live store it becomes
    const takenAt = (db.prepare('SELECT value FROM meta WHERE key = ?').get(META_BACKUP_TAKEN_AT) as { value: string } | undefined)?.value ?? null;
    db.prepare('DELETE FROM meta WHERE key = ?').run(META_BACKUP_TAKEN_AT);
    return { summary: summarize(db, source), takenAt };
  });
}

/**
 * The mail the replaced store holds and the staged backup does not, counted; null when the replaced
 * store cannot be read (it may be the damaged one the restore replaces).
 */
function notRestoredMail(staged: string, replaced: string): NotRestored | null {
  try {
    return withStoreFile(staged, (db) => {
      db.prepare('ATTACH DATABASE ? AS replaced').run(replaced);
      try {
        const count = (where: string): number =>
          Number(
            (
              db
                .prepare(`SELECT COUNT(*) AS n FROM replaced.messages r
          WHERE NOT EXISTS (SELECT 1 FROM main.messages m WHERE m.id = r.id) AND ${where}`)
                .get() as { n: number }
            ).n,
          );
        return {
          mailbox_messages: count('EXISTS (SELECT 1 FROM replaced.deliveries d WHERE d.msg_id = r.id)'),
          unsent_messages: count("EXISTS (SELECT 1 FROM replaced.outbox o WHERE o.msg_id = r.id AND o.kind = 'envelope' AND o.state = 'queued')"),
        };
      } finally {
        db.exec('DETACH DATABASE replaced');
      }
    });
  } catch {
    return null;
  }
}

/** Copies the live store (if any) to host.db.before-restore-<time> (0600) by the backup API; returns its path. */
async function keepRollbackCopy(live: string, nowMs: number): Promise<string | null> {
  if (!existsSync(live) || lstatSync(live).size === 0) return null;
  const path = `${live}.before-restore-${new Date(nowMs).toISOString().replace(/[:.]/g, '-')}`;
  createPrivateFile(path);
  try {
    const db = new DatabaseSync(live, { readOnly: true });
    try {
      await backup(db, path, { rate: -1 });
    } finally {
      db.close();
    }
    // one self-contained file, like a backup (no -wal beside it), readable on its own
    withStoreFile(path, (copy) => copy.exec('PRAGMA journal_mode = DELETE'));
  } catch (err) {
    removeDatabaseFiles(path);
    throw new BackupError(`the live ${live} cannot be copied aside before the restore (${(err as Error).message}): move it away first, then restore`);
  }
  fsyncPath(path);
  return path;
}

function withStoreFile<T>(path: string, fn: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(path);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function summarize(db: DatabaseSync, what: string): StoreSummary {
  const problems = db
    .prepare('PRAGMA quick_check')
    .all()
    .map((row) => String(Object.values(row)[0]));
  if (problems.join('; ') !== 'ok') throw new StoreError(`${what} is damaged: ${problems.join('; ')}`);
  const count = (sql: string): number => Number((db.prepare(sql).get() as { n: number } | undefined)?.n ?? 0);
  const owner = (db.prepare('SELECT value FROM meta WHERE key = ?').get(META_HOST_PUB) as { value: string } | undefined)?.value ?? '';
  return {
    host_fingerprint: fingerprint(owner),
    schema_version: count('SELECT user_version AS n FROM pragma_user_version'),
    messages: count('SELECT COUNT(*) AS n FROM messages'),
    outbox_rows: count('SELECT COUNT(*) AS n FROM outbox'),
  };
}

function removeDatabaseFiles(path: string): void {
  for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
}
