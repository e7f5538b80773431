// Host commands: init, whoami, daemon, host rotate; the mail, mcp, peers and doctor groups register
// from their own files.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { asCliError, openHomeNode, withNode } from './host-common.ts';
import { parsePort } from './parse-args.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson, printJsonLine, printResult } from './output.ts';
import { registerMailCommands } from './mail.ts';
import { registerMcpCommand } from './mcp.ts';
import { registerHookCommand } from './hook.ts';
import { registerGuardCommands } from './guard.ts';
import { registerPeerCommands } from './peers.ts';
import { registerDoctorCommand } from './doctor.ts';
import { registerBackupCommands } from './backup.ts';
import { registerSetupCommand } from './setup.ts';
import { registerRelayClientCommands } from './relay-client.ts';
import { registerUiCommand } from './ui.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import type { RunningDaemon } from '../host/daemon.ts';
import { defaultHome, DEFAULT_PORT, initHome } from '../host/core/identity.ts';
import { closeNode, openNode } from '../host/open-node.ts';
import { rotateHost } from '../host/core/rotation.ts';
import { normalizeAddr } from '../host/core/peer-addr.ts';

export function registerHostCommands(program: Command): void {
  program
    .command('init')
    .description('create this host: home, keys, config and store')
    .requiredOption('--host <name>', "this host's name (2-40 of a-z, 0-9, -)")
    .option('--port <port>', 'LAN port of the daemon', String(DEFAULT_PORT))
    .option('--bind <address>', 'address the daemon listens on (default 0.0.0.0)')
    .option('--addr <url>', 'URL peers use to reach this host (default: derived when the daemon starts)')
    .option('--json', 'print JSON')
    .action((opts: { host: string; port: string; bind?: string; addr?: string; json?: boolean }) => {
      const home = defaultHome();
      try {
        // every value is checked before initHome writes the first file: a refused init leaves nothing
        const port = parsePort(opts.port);
        const listen = { ...(opts.bind === undefined ? {} : { bind: opts.bind }), ...(opts.addr === undefined ? {} : { addr: normalizeAddr(opts.addr) }) };
        initHome(home, opts.host, port, listen);
        closeNode(openNode(home));
      } catch (err) {
        throw asCliError(err);
      }
      printResult(opts.json, { host: opts.host, home }, `created host ${opts.host} in ${home}`);
    });

  program
    .command('whoami')
    .description("this host's name, key and fingerprint")
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withNode((node) => {
        const info = {
          host: node.config.host,
          host_pubkey: node.keys.hostKey.publicKey,
          fingerprint: fingerprint(node.keys.hostKey.publicKey),
          enc_pub: node.keys.enc.publicKey,
          port: node.config.port,
          home: node.home,
        };
        if (opts.json === true) printJson(info);
        else process.stdout.write(`${info.host}  ${info.fingerprint}\nkey ${info.host_pubkey}\n`);
      }),
    );

  program
    .command('daemon')
    .description('serve the LAN endpoints and deliver the outbox (runs until stopped)')
    .option('--port <port>', 'port (default: the configured one; 0 picks a free one)')
    .option('--bind <address>', 'listen address (default: the configured one, else 0.0.0.0)')
    .option('--json', 'print the ready line and the log as JSON lines')
    .action(async (opts: { port?: string; bind?: string; json?: boolean }) => {
      // the daemon's modules load only here: every short command starts without them
      const [{ startDaemon }, { acquireDaemonLock }] = await Promise.all([import('../host/daemon.ts'), import('../host/daemon-lock.ts')]);
      const node = openHomeNode();
      let release: () => void;
      try {
        release = acquireDaemonLock(node.home);
      } catch (err) {
        closeNode(node);
        throw asCliError(err);
      }
      const port = opts.port === undefined ? node.config.port : parsePort(opts.port);
      const bind = opts.bind ?? node.config.bind ?? '0.0.0.0';
      let daemon: RunningDaemon;
      try {
        const log =
          opts.json === true
            ? (line: string) => printJsonLine({ at: new Date().toISOString(), msg: line })
            : (line: string) => process.stdout.write(`${new Date().toISOString()} ${inLine(line)}\n`);
        daemon = await startDaemon(node, { port, bind, log });
      } catch (err) {
        release();
        closeNode(node);
        throw new CliError(`cannot listen on ${bind}:${port}: ${err instanceof Error ? err.message : String(err)}`);
      }
      // listen for the stop signals before the ready line: whoever reads it may signal at once
      const stopped = new Promise<void>((resolve) => {
        const stop = (): void => {
          void daemon.stop().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      if (opts.json === true) printJsonLine({ host: node.config.host, listening: daemon.url });
      else process.stdout.write(`agentmbx daemon ${node.config.host} listening on ${daemon.url}\n`);
      await stopped;
      release();
      closeNode(node);
    });

  program
    .command('host')
    .description('host key management')
    .command('rotate')
    .description('new host and enc keys; peers are told and re-pin, retired keys keep working for older mail')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withNode((node) => {
        const rotation = rotateHost(node);
        const out = {
          host: rotation.rec.host,
          old_pub: rotation.rec.old_pub,
          new_pub: rotation.rec.new_pub,
          fingerprint: fingerprint(rotation.rec.new_pub),
          peers_told: node.store.peers.list().length,
        };
        if (opts.json === true) printJson(out);
        else process.stdout.write(`rotated: new key ${out.fingerprint}; ${out.peers_told} peer(s) will be told by the daemon\n`);
      }),
    );

  registerPeerCommands(program);
  registerMailCommands(program);
  registerMcpCommand(program);
  registerHookCommand(program);
  registerGuardCommands(program);
  registerDoctorCommand(program);
  registerBackupCommands(program);
  registerSetupCommand(program);
  registerUiCommand(program);
  // `relay set|unset|quarantine` join the operator's `relay` group (registered before the host's).
  const relay = program.commands.find((c) => c.name() === 'relay');
  if (relay !== undefined) registerRelayClientCommands(relay);
}
