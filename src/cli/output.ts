// How every command prints: JSON (pretty, one document on stdout) or text lines, and the one shape
// of a failure under --json.
import type { ExitName } from './exit-codes.ts';

/** The JSON document every command prints (pretty, without the final line break). */
export function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${jsonText(value)}\n`);
}

/** One compact JSON document on a line of its own: the form of lines that follow each other (a log, a stream of mail). */
export function printJsonLine(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Prints `value` as JSON with --json, else the text (a line break is added when missing). */
export function printResult(json: boolean | undefined, value: unknown, text: string): void {
  if (json === true) printJson(value);
  else process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Whether the command line asks for JSON (before any `--`, which ends the options). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** A failure: `{"error", "code"}` on stdout with --json, else `agentmbx: <sentence>` on stderr. */
export function printFailure(json: boolean, message: string, code: ExitName): void {
  if (json) printJson({ error: message, code });
  else process.stderr.write(`agentmbx: ${message}\n`);
}
