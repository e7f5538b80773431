// `agentmbx relay …`: the operator's commands.
import type { Command } from 'commander';
import { ConfigError, resolveServeOptions } from '../relay/config.ts';
import { generateRelayKeyText, RelayKeyError } from '../relay/ops/relay-key.ts';
import { WriterLockBusyError } from '../relay/ops/writer-lock.ts';
import { createRelayLogger } from '../relay/http/logging.ts';
import { startRelayService } from '../relay/relay-service.ts';
import { StoreOpenError } from '../relay/store/sqlite/index.ts';
import { CliError } from './cli-error.ts';
import { registerRelayOpsCommands } from './relay-ops.ts';

/** Start-up failures an operator can act on become one line; anything else stays unexpected. */
function explainStartFailure(err: unknown): never {
  if (err instanceof ConfigError) throw new CliError(err.message, 2);
  if (err instanceof RelayKeyError || err instanceof StoreOpenError || err instanceof WriterLockBusyError) throw new CliError(err.message);
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') throw new CliError('the port is already in use: pick another with --port or PORT');
  if (code === 'EACCES' || code === 'EADDRNOTAVAIL') throw new CliError(`cannot listen there (${code}): check --bind and --port`);
  throw err;
}

async function serve(flags: Record<string, string | undefined>): Promise<void> {
  let service;
  try {
    const options = resolveServeOptions(flags, process.env);
    service = await startRelayService({ ...options, env: process.env, requestLog: createRelayLogger() });
  } catch (err) {
    explainStartFailure(err);
  }
  process.stdout.write(`agentmbx relay listening on ${service.url} fingerprint ${service.fingerprint} epoch ${service.epoch}\n`);
  if (service.metricsUrl !== null) process.stderr.write(`agentmbx relay: metrics on ${service.metricsUrl}/metrics\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      resolve();
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
  await service.close();
  process.stdout.write('agentmbx relay stopped\n');
}

export function registerRelayCommands(program: Command): void {
  const relay = program.command('relay').description('run and operate a relay');
  relay.command('serve')
    .description('serve a relay on an embedded SQLite store')
    .option('--store-dir <dir>', 'store directory (env MBX_RELAY_DIR; default ~/.local/share/agentmbx-relay)')
    .option('--port <n>', 'TCP port (env PORT; default 7374)')
    .option('--bind <addr>', 'address to listen on (default 127.0.0.1)')
    .option('--config <file>', 'JSON file overriding the default limits')
    .option('--trust-proxy <mode>', 'client address from a proxy: xff or cloudflare (env MBX_RELAY_TRUST_PROXY)')
    .option('--metrics-bind <host:port>', 'serve /metrics and /healthz on this separate address instead of the relay port')
    .action(serve);
  relay.command('keygen')
    .description('print a new relay private key (base64) for MBX_RELAY_KEY; its fingerprint goes to stderr')
    .action(() => {
      const { privateKey, fingerprint } = generateRelayKeyText();
      process.stdout.write(`${privateKey}\n`);
      process.stderr.write(`fingerprint ${fingerprint}\n`);
    });
  registerRelayOpsCommands(relay);
}
