// `agentmbx hook claude <event> [--agent NAME]`: Claude Code's command hooks. main.ts runs this
// without the command tree (a hook runs on every prompt: it must start fast), and it never fails
// the user's session: whatever goes wrong is one line in <home>/hook.log, nothing on stdout, exit 0.
import type { Command } from 'commander';
import { appendFileSync, renameSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { defaultHome } from '../host/core/identity.ts';
import { closeNode, openNode } from '../host/open-node.ts';
import { claudeHookEvent, parseClaudeHookInput, runClaudeHook } from '../host/wake/claude-hook.ts';

/** The hook's log in the home; past this size it moves to hook.log.1 (one old file kept). */
export const HOOK_LOG_FILE = 'hook.log';
export const HOOK_LOG_MAX_BYTES = 1024 * 1024;
/** Most hook input read from stdin (Claude Code's is a few hundred bytes). */
export const HOOK_INPUT_MAX_BYTES = 1024 * 1024;
/** A stdin that stays open and silent this long is taken as empty (the hook was run by hand). */
export const HOOK_STDIN_IDLE_MS = 2_000;

const USAGE = 'usage: agentmbx hook claude <session-start|user-prompt-submit|stop> [--agent NAME]';

function log(home: string, entry: Record<string, unknown>): void {
  const path = join(home, HOOK_LOG_FILE);
  try {
    try {
      if (statSync(path).size > HOOK_LOG_MAX_BYTES) renameSync(path, `${path}.1`);
    } catch {
      // no log yet
    }
    appendFileSync(path, `${JSON.stringify({ at: new Date().toISOString(), ...entry })}\n`, { mode: 0o600 });
  } catch {
    // a home that cannot be written: the hook still must not disturb the session
  }
}

/** Stdin as text: '' for a terminal, up to HOOK_INPUT_MAX_BYTES, given up on after HOOK_STDIN_IDLE_MS of silence. */
function readInput(stdin: NodeJS.ReadStream): Promise<string> {
  if (stdin.isTTY === true) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (error: Error | null): void => {
      clearTimeout(idle);
      stdin.removeAllListeners('data');
      stdin.destroy();
      if (error === null) resolve(Buffer.concat(chunks).toString('utf8'));
      else reject(error);
    };
    const idle = setTimeout(() => done(null), HOOK_STDIN_IDLE_MS);
    stdin.on('data', (chunk: Buffer) => {
      idle.refresh();
      size += chunk.length;
      if (size > HOOK_INPUT_MAX_BYTES) done(new Error(`hook input over ${HOOK_INPUT_MAX_BYTES} bytes`));
      else chunks.push(chunk);
    });
    stdin.once('end', () => done(null));
    stdin.once('error', (error) => done(error));
  });
}

interface HookArgs {
  client: string | undefined;
  event: string | undefined;
  agent: string | undefined;
}

function parseArgs(args: readonly string[]): HookArgs {
  const rest: string[] = [];
  let agent: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === '--agent') agent = args[++i];
    else if (arg.startsWith('--agent=')) agent = arg.slice('--agent='.length);
    else if (arg !== '--json') rest.push(arg);
  }
  return { client: rest[0], event: rest[1], agent: agent ?? process.env['MBX_AGENT'] };
}

/** Runs the hook; always 0. Prints Claude Code's JSON answer, or nothing. */
export async function runHookCli(args: readonly string[]): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(
      `${USAGE}\nClaude Code's command hook: reads the event's JSON on stdin, prints its answer (or nothing); always exits 0, logging failures to <home>/${HOOK_LOG_FILE}.\n`,
    );
    return 0;
  }
  const home = defaultHome();
  const started = performance.now();
  const { client, event: eventName, agent } = parseArgs(args);
  const event = eventName === undefined ? null : claudeHookEvent(eventName);
  if (client !== 'claude' || event === null || agent === undefined || agent === '') {
    log(home, { error: agent === undefined || agent === '' ? `no agent: give --agent NAME or set MBX_AGENT; ${USAGE}` : USAGE, args });
    return 0;
  }
  try {
    const text = await readInput(process.stdin);
    let input: unknown = {};
    try {
      input = text.trim() === '' ? {} : JSON.parse(text);
    } catch {
      // unreadable input: a Stop then cannot know whether it already kept the session, so it keeps nothing
      if (event === 'Stop') throw new Error('the hook input is not JSON');
    }
    const node = openNode(home);
    try {
      const output = runClaudeHook(node, agent, event, parseClaudeHookInput(input));
      if (output !== null) {
        process.stdout.write(`${JSON.stringify(output)}\n`);
        log(home, { event, agent, output: 'decision' in output ? 'blocked the stop' : 'added a notice', ms: Math.round(performance.now() - started) });
      }
    } finally {
      closeNode(node);
    }
  } catch (err) {
    log(home, { event, agent, error: err instanceof Error ? err.message : String(err) });
  }
  return 0;
}

/** `hook` in the command tree, for --help (main.ts runs `agentmbx hook …` without the tree). */
export function registerHookCommand(program: Command): void {
  program
    .command('hook <client> <event>')
    .description("a client's hook (claude: session-start, user-prompt-submit, stop); never fails the session, logs to <home>/hook.log")
    .option('--agent <name>', 'the agent (default: $MBX_AGENT)')
    .option('--json', "taken for uniformity: the answer is always the client's JSON (or nothing)")
    .action(async (client: string, event: string, opts: { agent?: string }) => {
      await runHookCli([client, event, ...(opts.agent === undefined ? [] : ['--agent', opts.agent])]);
    });
}
