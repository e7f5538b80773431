// The host's side of `agentmbx relay …`: set, unset, quarantine (list, show, dismiss). Registered on the operator's
// `relay` group (src/cli/relay.ts) by host.ts.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { withNode } from './host-common.ts';
import { positiveInteger } from './parse-args.ts';
import type { HostNode } from '../host/core/node.ts';
import type { QuarantineRow } from '../host/store/relay-tables.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson, printResult } from './output.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { setRelay, unsetRelay } from '../host/relay-client/pin.ts';
import { dismissQuarantined } from '../host/owner-actions.ts';

export function registerRelayClientCommands(relay: Command): void {
  relay
    .command('set <url>')
    .description('use the relay at <url> for peers the LAN cannot reach; pins its key (as first seen, or exactly --key)')
    .option('--key <fingerprint>', 'the relay key fingerprint to pin (refuses any other key)')
    .option('--token-command <cmd>', 'a hosted relay: a shell command printing an account token (run when enrolling and before the token expires)')
    .option('--no-token-command', 'remove the token command (without either flag, the same URL keeps its command)')
    .option('--json', 'print JSON')
    .action((url: string, opts: { key?: string; tokenCommand?: string | false; json?: boolean }) =>
      withNode(async (node) => {
        const pinned = await setRelay(node, url, opts.key, opts.tokenCommand === false ? null : opts.tokenCommand);
        if (opts.json === true) printJson(pinned);
        else {
          process.stdout.write(
            `relay ${pinned.url} key ${pinned.fingerprint}${pinned.tofu ? " (pinned as first seen: compare it with the operator's)" : ' (matches --key)'}\n`,
          );
          process.stdout.write(pinned.token_command ? 'token command: set (account tokens for a hosted relay)\n' : 'token command: none\n');
        }
      }),
    );

  relay
    .command('unset')
    .description('stop using the relay (rows it accepted keep waiting for their receipts)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withNode((node) => {
        const wasSet = unsetRelay(node);
        printResult(opts.json, { unset: wasSet }, wasSet ? 'relay unset' : 'no relay was set');
      }),
    );

  const quarantine = relay
    .command('quarantine')
    .description('relay items this host refused, with the reason (kept, never dropped): list, show <seq>, dismiss <seq>')
    .option('--all', 'list dismissed items too')
    .option('--json', 'print JSON')
    .action((opts: { all?: boolean; json?: boolean }) =>
      withNode((node) => {
        const rows = node.store.relay.quarantined(undefined, opts.all === true);
        if (opts.json === true) {
          printJson(rows);
          return;
        }
        const dismissed = rows.length === 0 && opts.all !== true ? node.store.relay.quarantined().length : 0;
        if (rows.length === 0)
          process.stdout.write(`no quarantined relay items${dismissed === 0 ? '' : ` but ${dismissed} dismissed (agentmbx relay quarantine --all)`}\n`);
        for (const r of rows) {
          const when = r.dismissed_at == null ? '' : `  (dismissed ${new Date(r.dismissed_at).toISOString()})`;
          process.stdout.write(
            `${new Date(r.at).toISOString()}  seq ${r.seq}  ${r.kind} ${r.item_id} from ${fingerprint(r.sender_pubkey)}: ${inLine(r.reason)}${when}\n`,
          );
        }
      }),
    );

  quarantine
    .command('show <seq>')
    .description('one quarantined item: why it was refused and its exact wire')
    .option('--epoch <epoch>', 'the relay epoch, when items of several epochs have this seq')
    .option('--json', 'print JSON')
    .action((seq: string, _local: unknown, command: Command) =>
      withNode((node) => {
        const opts = command.optsWithGlobals<{ epoch?: string; json?: boolean }>();
        const row = quarantinedItem(node, seq, opts.epoch);
        const wire = Buffer.from(row.wire_b64, 'base64').toString('utf8');
        if (opts.json === true) printJson({ ...row, wire });
        else {
          process.stdout.write(
            `relay ${row.relay_url} epoch ${row.epoch} seq ${row.seq}\n${row.kind} ${row.item_id} from ${fingerprint(row.sender_pubkey)} at ${new Date(row.at).toISOString()}\n` +
              `refused: ${inLine(row.reason)}\n${row.dismissed_at == null ? '' : `dismissed ${new Date(row.dismissed_at).toISOString()}\n`}wire: ${inLine(wire)}\n`,
          );
        }
      }),
    );

  quarantine
    .command('dismiss <seq>')
    .description('the owner has seen it: it stays in the store, doctor no longer counts it')
    .option('--epoch <epoch>', 'the relay epoch, when items of several epochs have this seq')
    .option('--json', 'print JSON')
    .action((seq: string, _local: unknown, command: Command) =>
      withNode((node) => {
        const opts = command.optsWithGlobals<{ epoch?: string; json?: boolean }>();
        const row = quarantinedItem(node, seq, opts.epoch);
        const dismissed = dismissQuarantined(node, row);
        printResult(
          opts.json,
          { seq: row.seq, epoch: row.epoch, dismissed, already: !dismissed },
          dismissed ? `dismissed seq ${row.seq} (kept: agentmbx relay quarantine --all)` : `seq ${row.seq} was already dismissed`,
        );
      }),
    );
}

/** The quarantined item with relay seq `seqText` (and `epoch` when several epochs have one). */
function quarantinedItem(node: HostNode, seqText: string, epoch: string | undefined): QuarantineRow {
  const seq = positiveInteger(seqText, 'seq', Number.MAX_SAFE_INTEGER);
  const rows = node.store.relay.quarantinedAt(seq).filter((r) => epoch === undefined || r.epoch === epoch);
  if (rows.length === 0)
    throw new CliError(
      `no quarantined item with seq ${seq}${epoch === undefined ? '' : ` in epoch ${epoch}`}: see agentmbx relay quarantine --all`,
      'NOT_FOUND',
    );
  if (rows.length > 1)
    throw new CliError(`${rows.length} quarantined items have seq ${seq}: add --epoch, one of ${rows.map((r) => r.epoch).join(', ')}`, 'USAGE');
  return rows[0] as QuarantineRow;
}
