// `agentmbx relay backup|restore|rotate-epoch|log`: the operator's recovery tools (design §5).
// Thin over src/relay/ops/ (through relay-actions.ts); every refusal is one line, never a stack trace.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { STORE_DIR_HELP, STORE_URL_HELP } from './relay-serve-flags.ts';

/** Entries `relay log` shows unless --limit says otherwise. */
const DEFAULT_LOG_LIMIT = 50;

const actions = () => import('./relay-actions.ts');

/** backup and restore work on the SQLite store: a --store URL (PostgreSQL) is pointed to its own tools. */
function noPostgresHere(store: string | undefined, verb: string, tool: string): void {
  if (store === undefined) return;
  throw new CliError(
    `relay ${verb} works on the SQLite store (--store-dir); a PostgreSQL store is handled with ${tool}: see "Backup and restore" in docs/postgres.md`,
    'USAGE',
  );
}

export function registerRelayOpsCommands(relay: Command): void {
  relay
    .command('backup <file>')
    .description('write an online backup of the store to <file> (never overwrites); prints a JSON receipt')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--store <url>', 'a PostgreSQL store is backed up with pg_dump, not here (docs/postgres.md)')
    .option('--keep <n>', 'afterwards keep only the newest <n> backups named like <file> (same prefix before the first digit, same extension)')
    .option('--json', 'the receipt is always JSON')
    .action(async (file: string, flags: { storeDir?: string; store?: string; keep?: string }) => {
      noPostgresHere(flags.store, 'backup', 'pg_dump');
      return (await actions()).backup(file, flags);
    });
  relay
    .command('restore <file>')
    .description('replace the store with a backup (the relay must be stopped); keeps a rollback copy and writes a new epoch')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--store <url>', 'a PostgreSQL store is restored with pg_restore, then relay rotate-epoch (docs/postgres.md)')
    .option('--json', 'the receipt is always JSON')
    .action(async (file: string, flags: { storeDir?: string; store?: string }) => {
      noPostgresHere(flags.store, 'restore', 'pg_restore, then agentmbx relay rotate-epoch --store URL');
      return (await actions()).restore(file, flags);
    });
  relay
    .command('rotate-epoch')
    .description('give the store a new epoch (every relay using it must be stopped); needed after restoring a store by any other means')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--store <url>', STORE_URL_HELP)
    .option('--json', 'print JSON')
    .action(async (flags: { storeDir?: string; store?: string; json?: boolean }) => (await actions()).rotateEpoch(flags));
  relay
    .command('log')
    .description('show the operations log (restores, epoch rotations, backups), newest first')
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--store <url>', STORE_URL_HELP)
    .option('--json', 'print JSON')
    .option('--limit <n>', `entries to show (default ${DEFAULT_LOG_LIMIT})`)
    .action(async (flags: { storeDir?: string; store?: string; json?: boolean; limit?: string }) => (await actions()).showLog(flags, DEFAULT_LOG_LIMIT));
}
