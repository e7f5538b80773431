// `agentmbx relay backup <file>` (design §5): SQLite's online backup of the store while the relay
// serves (this process never takes the writer lock), written to a temporary name beside the target,
// made one self-contained file, integrity-checked, fsynced, then linked to its name (link, unlike
// rename, never replaces a file that appeared meanwhile), 0600. The JSON receipt says what it holds.
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, linkSync, openSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { appendRelayStoreOpsLog, readRelayStoreMeta, storeBackendOf } from '../store/open-relay-store.ts';
import { checkIntegrity, describeStoreFile, makeStandalone, onlineBackup, type StoreCounts } from '../store/store-files.ts';
import { fsyncPath } from '../../common/fsync-path.ts';
import { RelayOpsError } from './ops-error.ts';

export interface BackupReceipt {
  file: string;
  /** ISO time the backup was taken */
  time: string;
  bytes: number;
  sha256: string;
  epoch: string;
  relay_fingerprint: string;
  schema_version: number;
  counts: StoreCounts;
  /** older backups deleted by --keep */
  pruned: string[];
  /** set when the backup is good but the operations log could not record it (the store was busy too long) */
  ops_log_error?: string;
}

export interface BackupOptions {
  storeDir: string;
  file: string;
  /** keep only the newest N backups named like `file` (same prefix and extension) in its directory */
  keep?: number;
  nowMs?: () => number;
}

export async function backupRelayStore(options: BackupOptions): Promise<BackupReceipt> {
  const file = resolve(options.file);
  const dir = dirname(file);
  if (exists(file)) throw new RelayOpsError(`${file} already exists: a backup never overwrites a file; pick a new name`);
  storeBackendOf(options.storeDir); // a SQLite store: these steps work on its files
  await readRelayStoreMeta(options.storeDir); // refuses early when there is no relay store there
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    closeSync(openSync(temp, 'wx', 0o600));
  } catch (error) {
    throw new RelayOpsError(`cannot write in ${dir}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  const time = (options.nowMs ?? Date.now)();
  try {
    await onlineBackup(options.storeDir, temp);
    makeStandalone(temp);
    checkIntegrity(temp, `the backup copy ${temp}`);
    const { meta, counts } = describeStoreFile(temp, `the backup copy ${temp}`);
    fsyncPath(temp);
    const sha256 = await sha256File(temp);
    try {
      linkSync(temp, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new RelayOpsError(`${file} appeared while the backup ran: it was left alone`);
      throw error;
    }
    fsyncPath(dir);
    const receipt: BackupReceipt = {
      file,
      time: new Date(time).toISOString(),
      bytes: statSync(file).size,
      sha256,
      epoch: meta.epoch,
      relay_fingerprint: fingerprint(meta.relayPubkey),
      schema_version: meta.schemaVersion,
      counts,
      pruned: options.keep === undefined ? [] : pruneBackups(file, options.keep),
    };
    try {
      appendRelayStoreOpsLog(options.storeDir, {
        at: time,
        kind: 'backup',
        detail: { file, bytes: receipt.bytes, sha256, epoch: meta.epoch, pruned: receipt.pruned.length },
      });
    } catch (error) {
      receipt.ops_log_error = (error as Error).message;
    }
    return receipt;
  } finally {
    for (const suffix of ['', '-journal', '-wal', '-shm']) rmSync(`${temp}${suffix}`, { force: true });
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * The name pattern of `file`'s siblings that --keep counts: the same text before the first digit
 * and the same extension (`relay-2026-12-02.db` → `relay-*.db`). Without a digit, nothing else matches.
 */
export function backupPattern(file: string): RegExp {
  const name = basename(file);
  const digit = name.search(/[0-9]/);
  const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (digit < 0) return new RegExp(`^${literal(name)}$`);
  const dot = name.lastIndexOf('.');
  const extension = dot > digit ? name.slice(dot) : '';
  return new RegExp(`^${literal(name.slice(0, digit))}[0-9].*${literal(extension)}$`);
}

/** Deletes the oldest backups matching `file`'s pattern beyond `keep` (by modification time; `file` itself is kept). */
function pruneBackups(file: string, keep: number): string[] {
  const dir = dirname(file);
  const pattern = backupPattern(file);
  const matches = readdirSync(dir)
    .filter((name) => pattern.test(name))
    .map((name) => ({ path: join(dir, name), mtime: statSync(join(dir, name)).mtimeMs }))
    .filter((entry) => entry.path !== file)
    .sort((a, b) => b.mtime - a.mtime || b.path.localeCompare(a.path));
  const doomed = matches.slice(Math.max(0, keep - 1));
  for (const entry of doomed) unlinkSync(entry.path);
  return doomed.map((entry) => entry.path);
}
