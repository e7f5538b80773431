// `agentmbx watch --agent A --exec '<command>'`: the exec wake path's process side. The command runs
// under /bin/sh in its own process group (a timeout ends the whole group); its stdout and stderr go
// to this process's stderr, so that stdout carries only the log line of each run.
import { spawn } from 'node:child_process';
import { printJsonLine } from './output.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { watchDeliveries } from '../host/mail-watch.ts';
import { localAddress, type HostNode } from '../host/core/node.ts';
import { startExecRunner, type ExecLogEntry, type ExecResult, type ExecRun } from '../host/wake/exec-runner.ts';

/** After a timeout's SIGTERM, how long the command's group has before SIGKILL. */
export const EXEC_KILL_GRACE_MS = 5_000;

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** Runs `run.command` under /bin/sh with the batch on stdin; ends its process group at the timeout. */
export function runShellCommand(run: ExecRun): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', run.command], {
      stdio: ['pipe', process.stderr, process.stderr],
      detached: true,
      env: { ...process.env, ...run.env },
    });
    let killTimer: ReturnType<typeof setTimeout> | undefined;
    const timeout = setTimeout(() => {
      killGroup(child.pid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), EXEC_KILL_GRACE_MS);
    }, run.timeoutMs);
    const finish = (result: ExecResult): void => {
      clearTimeout(timeout);
      clearTimeout(killTimer);
      resolve(result);
    };
    child.once('error', (err) => finish({ code: null, signal: null, error: err.message }));
    child.once('exit', (code, signal) => finish({ code, signal }));
    // a command that does not read its stdin closes the pipe: that is its business
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(run.stdin);
  });
}

function logLine(json: boolean, entry: ExecLogEntry): void {
  if (json) {
    printJsonLine({ at: new Date().toISOString(), ...entry });
    return;
  }
  const ended =
    entry.error !== undefined ? `could not run: ${inLine(entry.error)}` : entry.signal !== null ? `killed by ${entry.signal}` : `exit ${entry.exit}`;
  const retry = entry.retry_in_ms === undefined ? '' : `; again in ${Math.round(entry.retry_in_ms / 1000)} s`;
  process.stdout.write(
    `${new Date().toISOString()} ran for ${entry.messages.length} message(s) of ${entry.agent}: ${ended} after ${entry.duration_ms} ms${retry}\n`,
  );
}

export interface WatchExecOptions {
  agent: string;
  command: string;
  debounceMs: number;
  timeoutMs: number;
  json: boolean;
}

/** Runs the command for new mail until `stopped` resolves, then waits for a run in progress. */
export async function watchExec(node: HostNode, opts: WatchExecOptions, stopped: Promise<void>): Promise<void> {
  const runner = startExecRunner({
    node,
    agent: opts.agent,
    command: opts.command,
    debounceMs: opts.debounceMs,
    timeoutMs: opts.timeoutMs,
    runCommand: runShellCommand,
    log: (entry) => logLine(opts.json, entry),
  });
  const watch = watchDeliveries(node, opts.agent, () => runner.poke());
  process.stderr.write(`watching the mail of ${localAddress(node, opts.agent)}; running: ${inLine(opts.command)}\n`);
  // mail that came while nobody watched
  runner.poke();
  await stopped;
  watch.stop();
  await runner.stop();
}
