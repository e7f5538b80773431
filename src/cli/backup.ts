// `agentmbx backup FILE` and `agentmbx restore FILE`: the host store's online backup and its restore
// (src/host/host-backup.ts; docs/host.md, "Backup and restore").
import type { Command } from 'commander';
import { asCliError, withNode } from './host-common.ts';
import { printJson } from './output.ts';
import { backupHost, restoreHost, type HostRestoreReceipt } from '../host/host-backup.ts';
import { defaultHome } from '../host/identity.ts';

export function registerBackupCommands(program: Command): void {
  program.command('backup <file>')
    .description('copy the store to FILE (0600), safe while the daemon runs; the keys are not in it')
    .option('--json', 'print JSON')
    .action((file: string, opts: { json?: boolean }) => withNode(async (node) => {
      const receipt = await backupHost(node, file);
      if (opts.json === true) printJson(receipt);
      else {
        process.stdout.write(`backed up ${receipt.messages} message(s), ${receipt.outbox_rows} outbox row(s) of host key ${receipt.host_fingerprint} to ${receipt.file} (${receipt.bytes} bytes)\n`
          + `not in it, keep them too (they change only at host rotate): ${receipt.not_included.join(', ')}\n`);
      }
    }));

  program.command('restore <file>')
    .description('put a backup made by agentmbx backup back as the store (the daemon must be stopped)')
    .option('--json', 'print JSON')
    .action(async (file: string, opts: { json?: boolean }) => {
      let receipt: HostRestoreReceipt;
      try {
        receipt = await restoreHost(defaultHome(), file, Date.now());
      } catch (err) {
        throw asCliError(err);
      }
      if (opts.json === true) printJson(receipt);
      else {
        process.stdout.write(`restored ${receipt.messages} message(s), ${receipt.outbox_rows} outbox row(s) from ${receipt.restored_from}`
          + `${receipt.rollback === null ? '' : `; the store it replaced is kept as ${receipt.rollback}`}\nstart the daemon: it re-sends what the backup still had waiting, and the peers drop what they already hold\n`);
      }
    });
}
