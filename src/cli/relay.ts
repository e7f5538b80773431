// `agentmbx relay …`: the operator's commands. Their work lives in relay-actions.ts, loaded only
// when one of them runs.
import type { Command } from 'commander';
import { registerRelayOpsCommands } from './relay-ops.ts';
import { addServeFlags } from './relay-serve-flags.ts';

const actions = () => import('./relay-actions.ts');

export function registerRelayCommands(program: Command): void {
  const relay = program.command('relay').description('run and operate a relay');
  addServeFlags(relay.command('serve').description('serve a relay on an embedded SQLite store, or on a PostgreSQL database several relay processes share'))
    .option(
      '--log-level <level>',
      'request log: debug (every request), info (polls summarised once a minute; default), warn, error or silent (env MBX_RELAY_LOG_LEVEL)',
    )
    .option('--json', 'print the start and stop lines as JSON')
    .action(async ({ json, logLevel, ...flags }: Record<string, string | undefined> & { json?: boolean }) =>
      (await actions()).serve(flags, { json: json === true, logLevel }),
    );
  relay
    .command('keygen')
    .description('print a new relay private key (base64) for MBX_RELAY_KEY; its fingerprint goes to stderr')
    .option('--json', 'print {"private_key", "fingerprint"} on stdout')
    .action(async (flags: { json?: boolean }) => (await actions()).keygen(flags));
  registerRelayOpsCommands(relay);
}
