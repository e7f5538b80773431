// `agentmbx backup FILE` and `agentmbx restore FILE`: the host store's online backup and its restore
// (src/host/host-backup.ts; docs/host.md, "Backup and restore").
import type { Command } from 'commander';
import { asCliError, withNode } from './host-common.ts';
import { printJson } from './output.ts';
import { backupHost, restoreHost, type HostRestoreReceipt } from '../host/host-backup.ts';
import { defaultHome } from '../host/core/identity.ts';

export function registerBackupCommands(program: Command): void {
  program
    .command('backup <file>')
    .description('copy the store to FILE (0600), safe while the daemon runs; the keys are not in it')
    .option('--json', 'print JSON')
    .action((file: string, opts: { json?: boolean }) =>
      withNode(async (node) => {
        const receipt = await backupHost(node, file);
        if (opts.json === true) printJson(receipt);
        else {
          process.stdout.write(
            `backed up ${receipt.messages} message(s), ${receipt.outbox_rows} outbox row(s) of host key ${receipt.host_fingerprint} to ${receipt.file} (${receipt.bytes} bytes)\n` +
              `not in it, keep them too (they change only at host rotate): ${receipt.not_included.join(', ')}\n`,
          );
        }
      }),
    );

  program
    .command('restore <file>')
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
      else process.stdout.write(restoreText(receipt));
    });
}

/**
 * What a restore did and what it means, plainly (docs/host.md, "Backup and restore"): mail that came
 * after the backup is not in it and nothing brings it back; what the host sent and had waiting goes again.
 */
export function restoreText(r: HostRestoreReceipt): string {
  const since = r.taken_at === null ? 'the backup was taken' : `the backup was taken (${r.taken_at})`;
  const lines = [
    `restored ${r.messages} message(s), ${r.outbox_rows} outbox row(s) from ${r.restored_from}${r.rollback === null ? '' : `; the store it replaced is kept as ${r.rollback}`}`,
    `LOST: mail this host received after ${since}, and mail between its own agents since then, is not in the restored mailboxes and will not come again: ` +
      'its senders and the relay count it delivered (their status shows it so); ask them to send again what you need',
  ];
  if (r.not_restored !== null && r.not_restored.mailbox_messages > 0) {
    lines.push(`  ${r.not_restored.mailbox_messages} such message(s) are only in ${r.rollback ?? 'the replaced store'}`);
  }
  if (r.not_restored !== null && r.not_restored.unsent_messages > 0) {
    lines.push(`LOST: ${r.not_restored.unsent_messages} message(s) written here after the backup were still waiting to go: no peer has them; send them again`);
  }
  lines.push(
    'not lost: mail this host sent that reached a peer or the relay; what the backup still had waiting goes again when the daemon starts, and the peers drop what they already hold',
    "start the daemon: it sends what waits and pulls from the relay again from the backup's position (what it already holds is dropped)",
  );
  return `${lines.join('\n')}\n`;
}
