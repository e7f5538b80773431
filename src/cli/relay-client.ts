// The host's side of `agentmbx relay …`: set, unset, quarantine. Registered on the operator's
// `relay` group (src/cli/relay.ts) by host.ts.
import type { Command } from 'commander';
import { withNode } from './host-common.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson, printResult } from './output.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { setRelay, unsetRelay } from '../host/transport/relay/relay-pin.ts';

export function registerRelayClientCommands(relay: Command): void {
  relay.command('set <url>')
    .description('use the relay at <url> for peers the LAN cannot reach; pins its key (as first seen, or exactly --key)')
    .option('--key <fingerprint>', 'the relay key fingerprint to pin (refuses any other key)')
    .option('--token-command <cmd>', 'a hosted relay: a shell command printing an account token (run when enrolling and before the token expires)')
    .option('--no-token-command', 'remove the token command (without either flag, the same URL keeps its command)')
    .option('--json', 'print JSON')
    .action((url: string, opts: { key?: string; tokenCommand?: string | false; json?: boolean }) => withNode(async (node) => {
      const pinned = await setRelay(node, url, opts.key, opts.tokenCommand === false ? null : opts.tokenCommand);
      if (opts.json === true) printJson(pinned);
      else {
        process.stdout.write(`relay ${pinned.url} key ${pinned.fingerprint}${pinned.tofu ? ' (pinned as first seen: compare it with the operator\'s)' : ' (matches --key)'}\n`);
        process.stdout.write(pinned.token_command ? 'token command: set (account tokens for a hosted relay)\n' : 'token command: none\n');
      }
    }));

  relay.command('unset')
    .description('stop using the relay (rows it accepted keep waiting for their receipts)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => withNode((node) => {
      const wasSet = unsetRelay(node);
      printResult(opts.json, { unset: wasSet }, wasSet ? 'relay unset' : 'no relay was set');
    }));

  relay.command('quarantine')
    .description('relay items this host refused, with the reason (kept, never dropped)')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => withNode((node) => {
      const rows = node.store.relay.quarantined();
      if (opts.json === true) {
        printJson(rows);
        return;
      }
      if (rows.length === 0) process.stdout.write('no quarantined relay items\n');
      for (const r of rows) {
        process.stdout.write(`${new Date(r.at).toISOString()}  seq ${r.seq}  ${r.kind} ${r.item_id} from ${fingerprint(r.sender_pubkey)}: ${inLine(r.reason)}\n`);
      }
    }));
}
