// agentmbx ui: the owner's page (src/ui) on 127.0.0.1, its own process beside the daemon; prints
// the one-time login link and serves until stopped.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { asCliError, openHomeNode } from './host-common.ts';
import { printJsonLine } from './output.ts';
import { parsePort } from './parse-args.ts';
import { closeNode } from '../host/open-node.ts';
import { LOGIN_TOKEN_TTL_MS } from '../ui/ui-gate.ts';
import type { RunningUi } from '../ui/ui-server.ts';

export function registerUiCommand(program: Command): void {
  program
    .command('ui')
    .description("serve the owner's page on 127.0.0.1 and print its one-time login link (runs until stopped)")
    .option('--port <port>', 'port on 127.0.0.1 (default: a free one)', '0')
    .option('--json', 'print the link as a JSON line')
    .action(async (opts: { port: string; json?: boolean }) => {
      const port = parsePort(opts.port);
      const { startUiServer } = await import('../ui/ui-server.ts');
      const node = openHomeNode();
      let ui: RunningUi;
      try {
        ui = await startUiServer(node, { port });
      } catch (err) {
        closeNode(node);
        const known = asCliError(err);
        if (known instanceof CliError) throw known;
        throw new CliError(`cannot serve the page on 127.0.0.1:${port}: ${err instanceof Error ? err.message : String(err)}`);
      }
      const stopped = new Promise<void>((resolve) => {
        const stop = (): void => {
          void ui.stop().then(resolve);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      if (opts.json === true) printJsonLine({ host: node.config.host, url: ui.loginUrl });
      else
        process.stdout.write(
          `agentmbx ui for ${node.config.host}: open ${ui.loginUrl}\n(the link works once, for ${LOGIN_TOKEN_TTL_MS / 60_000} minutes; the page is served on 127.0.0.1 only until you stop this command)\n`,
        );
      await stopped;
      closeNode(node);
    });
}
