// watch --exec as a wake path: runs a command when new mail arrives for an agent. One run at a time;
// mail that arrives during a run goes into the next; the first new mail opens a debounce window and
// what arrives inside it joins the run; a failing command is retried with a doubling delay (bounded)
// and its batch is only marked told once a run of it succeeds (a crash mid-run runs it again).
import { localAddress, type HostNode } from '../core/node.ts';
import { commitWake, pendingWake, WAKE_BATCH_MAX, type WakeBatch, type WakeNotice } from './wake.ts';

export const EXEC_DEBOUNCE_DEFAULT_MS = 2_000;
export const EXEC_TIMEOUT_DEFAULT_MS = 10 * 60_000;
/** The first retry after a failed run; each further failure doubles it, up to the max. */
export const EXEC_BACKOFF_BASE_MS = 1_000;
export const EXEC_BACKOFF_MAX_MS = 5 * 60_000;

/** One run of the command: its stdin (the batch as JSON) and its environment additions. */
export interface ExecRun {
  command: string;
  stdin: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/** How a run ended: an exit code, or the signal that ended it (a timeout kills it), or why it could not start. */
export interface ExecResult {
  code: number | null;
  signal: string | null;
  error?: string;
}

export type RunCommand = (run: ExecRun) => Promise<ExecResult>;

/** Timers the runner schedules on (tests pass ones they fire by hand). */
export interface ExecTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const REAL_TIMERS: ExecTimers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** One line of the runner's log: a run's outcome. */
export interface ExecLogEntry {
  agent: string;
  messages: string[];
  exit: number | null;
  signal: string | null;
  error?: string;
  duration_ms: number;
  /** after a failure: when the batch is tried again (ms from now) */
  retry_in_ms?: number;
}

export interface ExecRunnerOptions {
  node: HostNode;
  agent: string;
  command: string;
  debounceMs?: number;
  timeoutMs?: number;
  runCommand: RunCommand;
  timers?: ExecTimers;
  log(entry: ExecLogEntry): void;
}

export interface ExecRunner {
  /** new mail may have arrived: run (after the debounce window, or after the current run) */
  poke(): void;
  /** no more runs; resolves when a run in progress has ended */
  stop(): Promise<void>;
}

/** The delay before retry number `failures` (1, 2, …): doubling from the base, at most the max. */
export function backoffMs(failures: number): number {
  return Math.min(EXEC_BACKOFF_BASE_MS * 2 ** Math.min(Math.max(failures - 1, 0), 30), EXEC_BACKOFF_MAX_MS);
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** The environment a run gets (documented in docs/agents.md): space-separated lists. */
export function execEnv(node: HostNode, agent: string, notices: readonly WakeNotice[]): Record<string, string> {
  return {
    MBX_HOME: node.home,
    MBX_AGENT: agent,
    MBX_ADDRESS: localAddress(node, agent),
    MBX_COUNT: String(notices.length),
    MBX_MESSAGE_IDS: notices.map((n) => n.id).join(' '),
    MBX_SENDERS: unique(notices.map((n) => n.from)).join(' '),
    MBX_THREADS: unique(notices.map((n) => n.thread)).join(' '),
    MBX_NEEDS_REPLY: String(notices.filter((n) => n.needs_reply).length),
  };
}

export function startExecRunner(opts: ExecRunnerOptions): ExecRunner {
  const { node, agent } = opts;
  const timers = opts.timers ?? REAL_TIMERS;
  const debounceMs = opts.debounceMs ?? EXEC_DEBOUNCE_DEFAULT_MS;
  const timeoutMs = opts.timeoutMs ?? EXEC_TIMEOUT_DEFAULT_MS;
  let timer: unknown = null;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  let failures = 0;
  let retryAt = 0;

  const poke = (): void => {
    if (stopped) return;
    if (running !== null) {
      again = true;
      return;
    }
    if (timer !== null) return;
    timer = timers.setTimeout(fire, Math.max(debounceMs, retryAt - node.nowMs()));
  };

  const run = async (batch: WakeBatch): Promise<void> => {
    const notices = batch.woken.map((w) => w.notice);
    const started = node.nowMs();
    let result: ExecResult;
    try {
      result = await opts.runCommand({
        command: opts.command,
        timeoutMs,
        env: execEnv(node, agent, notices),
        stdin: `${JSON.stringify({ agent: localAddress(node, agent), messages: notices })}\n`,
      });
    } catch (err) {
      result = { code: null, signal: null, error: err instanceof Error ? err.message : String(err) };
    }
    const entry: ExecLogEntry = {
      agent,
      messages: notices.map((n) => n.id),
      exit: result.code,
      signal: result.signal,
      duration_ms: node.nowMs() - started,
      ...(result.error === undefined ? {} : { error: result.error }),
    };
    if (result.code === 0) {
      commitWake(node, batch);
      failures = 0;
      retryAt = 0;
      // a full batch leaves more behind
      if (batch.woken.length + batch.held.length >= WAKE_BATCH_MAX) again = true;
    } else {
      failures++;
      const delay = backoffMs(failures);
      retryAt = node.nowMs() + delay;
      entry.retry_in_ms = delay;
      again = true;
    }
    opts.log(entry);
  };

  const fire = (): void => {
    timer = null;
    if (stopped) return;
    let batch: WakeBatch;
    try {
      batch = pendingWake(node, agent, 'exec');
    } catch (err) {
      // the store was busy or failing: look again later, as after a failed run
      failures++;
      retryAt = node.nowMs() + backoffMs(failures);
      opts.log({
        agent,
        messages: [],
        exit: null,
        signal: null,
        error: err instanceof Error ? err.message : String(err),
        duration_ms: 0,
        retry_in_ms: backoffMs(failures),
      });
      poke();
      return;
    }
    if (batch.woken.length === 0) {
      // nothing to run for (read already, or held by the loop guard): remember that much
      if (batch.held.length > 0 || batch.through > node.store.wake.cursor(agent, 'exec')) commitWake(node, batch);
      return;
    }
    running = run(batch).finally(() => {
      running = null;
      if (again) {
        again = false;
        poke();
      }
    });
  };

  return {
    poke,
    async stop() {
      stopped = true;
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}
