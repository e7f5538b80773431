// Entry point of the `agentmbx` command. node:sqlite still announces itself as experimental on
// Node 24; that notice is noise for users, so it is filtered before the program (and sqlite) load.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const text = typeof warning === 'string' ? warning : warning.message;
  if (/SQLite is an experimental feature|Type Stripping is an experimental feature/.test(text)) return;
  (emitWarning as (w: string | Error, ...r: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

// A reader that stops early (`agentmbx inbox … | head -1`) closes the pipe: stop quietly, as
// other command-line tools do, instead of an unhandled 'error' event.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => process.exit(err.code === 'EPIPE' ? 0 : 1));
}

const args = process.argv.slice(2);
if (args[0] === 'hook') {
  // a client's hook runs on every prompt: it loads neither the command tree nor the servers (and
  // bin/agentmbx has Node keep its compiled code between runs)
  const { runHookCli } = await import('./hook.ts');
  process.exitCode = await runHookCli(args.slice(1));
} else {
  const { runCli } = await import('./program.ts');
  process.exitCode = await runCli(args);
}
