// `agentmbx relay …`: the operator's commands. Their work lives in relay-actions.ts, loaded only
// when one of them runs.
import type { Command } from 'commander';
import { registerRelayOpsCommands } from './relay-ops.ts';

const actions = () => import('./relay-actions.ts');

export function registerRelayCommands(program: Command): void {
  const relay = program.command('relay').description('run and operate a relay');
  relay.command('serve')
    .description('serve a relay on an embedded SQLite store, or on a PostgreSQL database several relay processes share')
    .option('--store-dir <dir>', 'store directory (env MBX_RELAY_DIR; default ~/.local/share/agentmbx-relay)')
    .option('--store <url>', 'a postgres:// URL: keep the store in that PostgreSQL database instead (env MBX_RELAY_STORE)')
    .option('--port <n>', 'TCP port (env PORT; default 7374)')
    .option('--bind <addr>', 'address to listen on (default 127.0.0.1)')
    .option('--config <file>', 'JSON file overriding the default limits')
    .option('--trust-proxy <mode>', 'client address from a proxy: xff or cloudflare (env MBX_RELAY_TRUST_PROXY)')
    .option('--metrics-bind <host:port>', 'serve /metrics and /healthz on this separate address instead of the relay port')
    .option('--workers <n>', 'relay processes serving the port on one store (env MBX_RELAY_WORKERS; default: the machine\'s cores; 1: a single process)')
    .option('--log-level <level>', 'request log: debug (every request), info (polls summarised once a minute; default), warn, error or silent (env MBX_RELAY_LOG_LEVEL)')
    .option('--json', 'print the start and stop lines as JSON')
    .action(async ({ json, logLevel, ...flags }: Record<string, string | undefined> & { json?: boolean }) => (await actions()).serve(flags, { json: json === true, logLevel }));
  relay.command('keygen')
    .description('print a new relay private key (base64) for MBX_RELAY_KEY; its fingerprint goes to stderr')
    .option('--json', 'print {"private_key", "fingerprint"} on stdout')
    .action(async (flags: { json?: boolean }) => (await actions()).keygen(flags));
  registerRelayOpsCommands(relay);
}
