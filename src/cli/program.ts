// The command tree. Each command group lives in its own file and registers itself here.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { CliError } from './cli-error.ts';
import { EXIT_CODES } from './exit-codes.ts';
import { jsonText, printFailure, wantsJson } from './output.ts';
import { registerRelayCommands } from './relay.ts';

const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

function packageVersion(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

/**
 * The command tree; `json` (the command line has --json) makes --version print {"version": …}.
 * `relayOnly` (the command is `relay serve`) leaves out the host's commands (among them the host's
 * own `relay set|unset|quarantine`), so that a relay process loads none of the host's code (its
 * daemon, MCP server, their libraries): every process of a relay group would otherwise keep them in
 * memory (docs/relay-operator.md "Memory").
 */
export async function buildProgram(json = false, relayOnly = false): Promise<Command> {
  const version = packageVersion();
  const program = new Command('agentmbx')
    .description('signed, sealed mail between AI agents on different machines')
    .version(json ? jsonText({ version }) : version, '-V, --version', 'print the agentmbx version (with --json: {"version": …})')
    .addHelpText(
      'after',
      '\nEnvironment:\n  MBX_HOME   this host\'s home (keys, config, store); default ~/.local/share/agentmbx\n\nExit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 not paired, 5 unreachable, 6 storage, 7 timed out (inbox --wait), 70 internal.\nWith --json a failure is {"error", "code"} on stdout.',
    )
    .exitOverride()
    // usage errors are printed by runCli, in the same shape as every other failure
    .configureOutput({ writeErr: (text) => process.stderr.write(text), outputError: () => undefined });
  registerRelayCommands(program);
  if (!relayOnly) (await import('./host.ts')).registerHostCommands(program);
  return program;
}

/** The host's disk fault behind `err` (a full or read-only disk under its home), named with its fix, or null. */
async function hostDiskFault(err: unknown): Promise<string | null> {
  const [{ nameDiskError }, { defaultHome }] = await Promise.all([import('../host/store/disk-errors.ts'), import('../host/core/identity.ts')]);
  return nameDiskError(err, defaultHome());
}

/** Runs the CLI and returns the exit status; every failure is one line (or one JSON object), never a stack trace. */
export async function runCli(argv: string[]): Promise<number> {
  const json = wantsJson(argv);
  // the top level's options (--json, --version, --help) take no value: the first words are the command
  const [group, command] = argv.filter((arg) => !arg.startsWith('-'));
  const program = await buildProgram(json, group === 'relay' && command === 'serve');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT_CODES.OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return EXIT_CODES.OK;
      // a command group run without its subcommand: commander has printed the help already
      if (err.code === 'commander.help') return EXIT_CODES.USAGE;
      // one line: commander's "(Did you mean …?)" comes on a second line
      printFailure(json, err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' '), 'USAGE');
      return EXIT_CODES.USAGE;
    }
    // a full or read-only disk under the host's home is named as such (with the fix), whatever layer
    // met it; the relay's commands name their own store's disk
    const diskFault = argv[0] === 'relay' ? null : await hostDiskFault(err);
    if (diskFault !== null) {
      printFailure(json, diskFault, 'STORAGE');
      return EXIT_CODES.STORAGE;
    }
    if (err instanceof CliError) {
      if (!(json && err.inJsonOutput)) printFailure(json, err.message, err.code);
      return err.exitCode;
    }
    printFailure(json, `unexpected error: ${err instanceof Error ? err.message : String(err)}`, 'INTERNAL');
    return EXIT_CODES.INTERNAL;
  }
}
