// The owner's token command (`relay set --token-command`), run in the manner of a credential helper:
// `/bin/sh -c <cmd>` in its own process group, stdin closed, output capped, the whole group killed
// on timeout. Its token is stdout trimmed: one JWT, whose `exp` (read, not verified: the relay
// verifies it) says when to run the command again. A failure is one line that never holds a token.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { JWTPayload } from 'jose';
import { UNSHOWABLE } from '../../common/terminal-text.ts';

/** A token command that has not finished by then is killed (its whole process group). */
export const TOKEN_COMMAND_TIMEOUT_MS = 30_000;
/** Most stdout a token command may print; more is a failure (a token is a few hundred bytes). */
export const TOKEN_MAX_BYTES = 16 * 1024;
/** Tail of the command's stderr kept for its failure reason. */
export const TOKEN_STDERR_MAX_BYTES = 16 * 1024;
/** Longest failure reason taken from the command's stderr. */
export const TOKEN_REASON_MAX_CHARS = 200;
/** A token is replaced when less than max(this, a fifth of its lifetime) is left. */
export const TOKEN_REFRESH_MIN_MS = 60_000;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Anything that may be a token: a JOSE header's `eyJ` start, or three long base64url parts. */
const TOKEN_LIKE = /eyJ[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]*)*|[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g;

/** `text` with anything token-like replaced by `[token]`: what a reason shows of a command's output. */
export function redactTokens(text: string): string {
  return text.replace(TOKEN_LIKE, '[token]');
}

export interface AccessToken {
  /** the JWT text: kept in memory only, never stored or logged */
  token: string;
  expMs: number;
  /** its `iat`, or when it was read when it has none */
  iatMs: number;
}

export type TokenRun = { ok: true; token: AccessToken } | { ok: false; reason: string };

/** Whether `token` is due for replacement at `nowMs`. */
export function tokenNeedsRefresh(token: AccessToken, nowMs: number): boolean {
  return nowMs >= token.expMs - Math.max(TOKEN_REFRESH_MIN_MS, (token.expMs - token.iatMs) / 5);
}

/** The token in a command's stdout, or why there is none (never quoting the output). jose loads on the first token: most hosts use no token relay. */
export async function parseTokenOutput(stdout: string, nowMs: number): Promise<TokenRun> {
  const text = stdout.trim();
  if (text === '') return { ok: false, reason: 'printed no token' };
  const { decodeJwt } = await import('jose');
  let claims: JWTPayload;
  try {
    if (!JWT_SHAPE.test(text)) throw new Error('not a JWT');
    claims = decodeJwt(text);
  } catch {
    return { ok: false, reason: 'printed something that is not a token' };
  }
  if (typeof claims.exp !== 'number') return { ok: false, reason: 'printed a token without an "exp" claim' };
  const expMs = claims.exp * 1000;
  if (expMs <= nowMs) return { ok: false, reason: 'printed a token that has already expired' };
  const iatMs = typeof claims.iat === 'number' && claims.iat * 1000 < expMs ? claims.iat * 1000 : nowMs;
  return { ok: true, token: { token: text, expMs, iatMs } };
}

/** Terminal escape sequences (colours, cursor moves) a command may print to its stderr. */
const ESCAPE_SEQUENCE = /\x1b\[[0-9;?]*[ -/]*[@-~]/g;

function exitReason(code: number | null, signal: NodeJS.Signals | null, stderr: string): string {
  const lines = stderr
    .split(/[\r\n]/)
    .map((l) => l.replace(ESCAPE_SEQUENCE, '').replace(UNSHOWABLE, ' ').trim())
    .filter((l) => l !== '');
  const last = lines[lines.length - 1];
  if (last !== undefined) return redactTokens(last).slice(0, TOKEN_REASON_MAX_CHARS);
  return code !== null ? `exited with status ${code}` : `was killed by ${signal ?? 'a signal'}`;
}

export interface TokenCommandOptions {
  command: string;
  /** added to this process's environment */
  env: Record<string, string>;
  nowMs: () => number;
  timeoutMs?: number;
}

/** Runs the token command once. */
export function runTokenCommand(options: TokenCommandOptions): Promise<TokenRun> {
  const timeoutMs = options.timeoutMs ?? TOKEN_COMMAND_TIMEOUT_MS;
  return new Promise((resolve) => {
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn('/bin/sh', ['-c', options.command], {
        env: { ...process.env, ...options.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
    } catch (e) {
      // spawn refuses some input at once (a NUL byte); its message quotes the command, so only the code is shown
      resolve({ ok: false, reason: `could not be started (${(e as NodeJS.ErrnoException).code ?? 'refused'})` });
      return;
    }
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = Buffer.alloc(0);
    let done = false;
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    };
    const finish = (run: TokenRun): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(run);
    };
    const timer = setTimeout(() => {
      killGroup();
      finish({ ok: false, reason: `timed out after ${Math.round(timeoutMs / 100) / 10} s` });
    }, timeoutMs);
    child.on('error', (e) => finish({ ok: false, reason: `could not be started: ${e.message}` }));
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > TOKEN_MAX_BYTES) {
        killGroup();
        finish({ ok: false, reason: `printed more than ${TOKEN_MAX_BYTES} bytes` });
      } else out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = Buffer.concat([err, chunk]);
      if (err.length > TOKEN_STDERR_MAX_BYTES) err = err.subarray(err.length - TOKEN_STDERR_MAX_BYTES);
    });
    child.on('close', (code, signal) => {
      if (code !== 0) finish({ ok: false, reason: exitReason(code, signal, err.toString('utf8')) });
      else
        void parseTokenOutput(Buffer.concat(out).toString('utf8'), options.nowMs()).then(finish, (e: Error) =>
          finish({ ok: false, reason: `could not be read: ${e.message}` }),
        );
    });
  });
}

/**
 * The current token, per process: reused until it is due for refresh, then the command runs again.
 * One run at a time: concurrent callers share it. `drop` forgets the token (the relay refused it).
 */
export class TokenCache {
  readonly #nowMs: () => number;
  #cached: { key: string; token: AccessToken } | null = null;
  #running: { key: string; run: Promise<TokenRun> } | null = null;

  constructor(nowMs: () => number) {
    this.#nowMs = nowMs;
  }

  /** The token for `key` (the command and what it was given), running `run` when none is fresh. */
  get(key: string, run: () => Promise<TokenRun>): Promise<TokenRun> {
    const cached = this.#cached;
    if (cached !== null && cached.key === key && !tokenNeedsRefresh(cached.token, this.#nowMs())) return Promise.resolve({ ok: true, token: cached.token });
    if (this.#running?.key === key) return this.#running.run;
    const current = {
      key,
      run: Promise.resolve()
        .then(run)
        .then((result) => {
          if (result.ok) this.#cached = { key, token: result.token };
          else if (this.#cached?.key === key) this.#cached = null;
          return result;
        })
        .finally(() => {
          // a run that threw is not kept either: the next caller runs the command again
          if (this.#running === current) this.#running = null;
        }),
    };
    this.#running = current;
    return current.run;
  }

  /**
   * Forgets the cached token. A run going on is kept for its callers: it was started after the
   * refused token was had, so its token is a newer one.
   */
  drop(): void {
    this.#cached = null;
  }
}
