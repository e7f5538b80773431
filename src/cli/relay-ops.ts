// `agentmbx relay backup|restore|rotate-epoch|log`: the operator's recovery tools (design §5).
// Thin over src/relay/ops/; every refusal is one line (CliError), never a stack trace.
import type { Command } from 'commander';
import { ConfigError, resolveServeOptions } from '../relay/config.ts';
import { backupRelayStore } from '../relay/ops/backup.ts';
import { rotateEpochOffline } from '../relay/ops/epoch.ts';
import { RelayOpsError } from '../relay/ops/ops-error.ts';
import { RelayKeyError } from '../relay/ops/relay-key.ts';
import { restoreRelayStore } from '../relay/ops/restore.ts';
import { WriterLockBusyError } from '../relay/ops/writer-lock.ts';
import type { StoredOpsLogEntry } from '../relay/store/relay-store.ts';
import { StoreOpenError } from '../relay/store/sqlite/index.ts';
import { MAX_OPS_LOG_ENTRIES } from '../relay/store/sqlite/ops-log.ts';
import { readOpsLogOfStore } from '../relay/store/sqlite/store-files.ts';
import { CliError } from './cli-error.ts';

const STORE_DIR_HELP = 'store directory (env MBX_RELAY_DIR; default ~/.local/share/agentmbx-relay)';
/** Entries `relay log` shows unless --limit says otherwise. */
const DEFAULT_LOG_LIMIT = 50;

/** The store directory exactly as `relay serve` resolves it. */
function storeDirOf(flags: { storeDir?: string }): string {
  return resolveServeOptions({ ...(flags.storeDir === undefined ? {} : { storeDir: flags.storeDir }) }, process.env).storeDir;
}

function positiveInteger(text: string, flag: string, max: number): number {
  const value = /^[1-9][0-9]*$/.test(text) ? Number(text) : NaN;
  if (!(value <= max)) throw new CliError(`${flag} must be an integer from 1 to ${max}`, 2);
  return value;
}

/** Runs an operation; the failures an operator can act on become one line. */
async function operate<T>(fn: () => Promise<T> | T): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ConfigError) throw new CliError(err.message, 2);
    if (err instanceof RelayOpsError || err instanceof StoreOpenError || err instanceof RelayKeyError || err instanceof WriterLockBusyError) {
      throw new CliError(err.message);
    }
    throw err;
  }
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function logLine(entry: StoredOpsLogEntry): string {
  const detail = Object.entries(entry.detail)
    .filter(([, value]) => value !== null && typeof value !== 'object')
    .map(([key, value]) => `${key}=${String(value)}`)
    .join(' ');
  return `${new Date(entry.at).toISOString()} ${entry.kind} ${detail}`.trimEnd();
}

export function registerRelayOpsCommands(relay: Command): void {
  relay.command('backup <file>')
    .description('write an online backup of the store to <file> (never overwrites); prints a JSON receipt')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--keep <n>', 'afterwards keep only the newest <n> backups named like <file> (same prefix before the first digit, same extension)')
    .action(async (file: string, flags: { storeDir?: string; keep?: string }) => {
      const keep = flags.keep === undefined ? undefined : positiveInteger(flags.keep, '--keep', 100_000);
      const receipt = await operate(() => backupRelayStore({ storeDir: storeDirOf(flags), file, ...(keep === undefined ? {} : { keep }) }));
      printJson(receipt);
      if (receipt.ops_log_error !== undefined) process.stderr.write(`agentmbx: the backup is good, but the operations log could not record it: ${receipt.ops_log_error}\n`);
    });
  relay.command('restore <file>')
    .description('replace the store with a backup (the relay must be stopped); keeps a rollback copy and writes a new epoch')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .action(async (file: string, flags: { storeDir?: string }) => {
      const receipt = await operate(() => restoreRelayStore({ storeDir: storeDirOf(flags), file, env: process.env }));
      printJson(receipt);
      process.stderr.write('restored: start the relay; hosts see the new epoch, senders re-push and receivers pull again\n');
    });
  relay.command('rotate-epoch')
    .description('give the store a new epoch (the relay must be stopped); needed after restoring a store by any other means')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .action(async (flags: { storeDir?: string }) => {
      const rotation = await operate(() => rotateEpochOffline({ storeDir: storeDirOf(flags) }));
      process.stdout.write(`epoch rotated: ${rotation.from} -> ${rotation.to}\n`);
    });
  relay.command('log')
    .description('show the operations log (restores, epoch rotations, backups), newest first')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--json', 'print JSON')
    .option('--limit <n>', `entries to show (default ${DEFAULT_LOG_LIMIT})`)
    .action(async (flags: { storeDir?: string; json?: boolean; limit?: string }) => {
      const limit = flags.limit === undefined ? DEFAULT_LOG_LIMIT : positiveInteger(flags.limit, '--limit', MAX_OPS_LOG_ENTRIES);
      const entries = await operate(() => readOpsLogOfStore(storeDirOf(flags), limit));
      if (flags.json === true) printJson(entries);
      else process.stdout.write(entries.length === 0 ? 'the operations log is empty\n' : `${entries.map(logLine).join('\n')}\n`);
    });
}
