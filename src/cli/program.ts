// The command tree. Each command group lives in its own file and registers itself here.
import { Command, CommanderError } from 'commander';
import { CliError } from './cli-error.ts';
import { registerRelayCommands } from './relay.ts';
import { registerHostCommands } from './host.ts';
import { defaultHome } from '../host/identity.ts';
import { nameDiskError } from '../host/store/disk-errors.ts';

export function buildProgram(): Command {
  const program = new Command('agentmbx')
    .description('signed, sealed mail between AI agents on different machines')
    .exitOverride()
    .configureOutput({ writeErr: (text) => process.stderr.write(text) });
  registerRelayCommands(program);
  registerHostCommands(program);
  return program;
}

/** Runs the CLI and returns the exit status; every failure is one line on stderr, never a stack trace. */
export async function runCli(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    // a full or read-only disk under the host's home is named as such (with the fix), whatever layer
    // met it; the relay's commands name their own store's disk
    const diskFault = argv[0] === 'relay' ? null : nameDiskError(err, defaultHome());
    if (diskFault !== null) {
      process.stderr.write(`agentmbx: ${diskFault}\n`);
      return err instanceof CliError ? err.exitCode : 1;
    }
    if (err instanceof CliError) {
      process.stderr.write(`agentmbx: ${err.message}\n`);
      return err.exitCode;
    }
    process.stderr.write(`agentmbx: unexpected error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
