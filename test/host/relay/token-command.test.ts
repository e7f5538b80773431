// The token command runner and its cache (src/host/relay-client/token.ts) with tiny shell commands: the token from
// stdout, one-line reasons that never hold a token, the caps, the timeout killing the whole
// process group, the refresh rule, one run at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  parseTokenOutput,
  redactTokens,
  runTokenCommand,
  TOKEN_MAX_BYTES,
  TOKEN_REASON_MAX_CHARS,
  TOKEN_STDERR_MAX_BYTES,
  TokenCache,
  tokenNeedsRefresh,
  type AccessToken,
  type TokenRun,
} from '../../../src/host/relay-client/token.ts';
import { tempDir } from '../../helpers/processes.ts';

const NOW = Date.parse('2026-12-02T12:00:00.000Z');
const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A JWT-shaped token (unsigned: the host reads exp/iat without verifying; the relay verifies). */
function jwt(claims: Record<string, unknown>): string {
  return `${b64url({ alg: 'EdDSA', kid: 'k1', typ: 'at+jwt' })}.${b64url({ sub: 's', ...claims })}.${Buffer.from('signature-bytes-here').toString('base64url')}`;
}

const fresh = (lifetimeS = 600, iatS = NOW / 1000): string => jwt({ iat: iatS, exp: iatS + lifetimeS });

async function run(command: string, env: Record<string, string> = {}, timeoutMs?: number): Promise<TokenRun> {
  return runTokenCommand({ command, env, nowMs: () => NOW, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
}

function failed(result: TokenRun): string {
  assert.equal(result.ok, false, 'the command should have failed');
  return result.ok ? '' : result.reason;
}

test('the token is stdout trimmed; exp and iat are read from it; the command gets the env it is given, stdin closed', async () => {
  const token = fresh();
  const dir = tempDir('mbx-token-');
  const result = await run(`cat > '${join(dir, 'stdin')}'; printf '%s' "$AGENTMBX_HOST" > '${join(dir, 'env')}'; printf '  %s\\n\\n' "$TOKEN"`, {
    TOKEN: token,
    AGENTMBX_HOST: 'alpha',
  });
  assert.ok(result.ok, JSON.stringify(result));
  assert.deepEqual(result.token, { token, expMs: NOW + 600_000, iatMs: NOW });
  assert.equal(readFileSync(join(dir, 'env'), 'utf8'), 'alpha');
  assert.equal(readFileSync(join(dir, 'stdin'), 'utf8'), '', 'stdin is closed: nothing to read, no hang');
});

test('a failing command gives its last stderr line with anything token-like replaced by [token]', async () => {
  const token = fresh();
  const reason = failed(await run(`echo 'starting' >&2; printf 'refresh failed: got %s from the cache\\n\\n' "$TOKEN" >&2; exit 3`, { TOKEN: token }));
  assert.equal(reason, 'refresh failed: got [token] from the cache');
  assert.ok(!reason.includes(token));
  assert.equal(failed(await run('exit 3')), 'exited with status 3');
  const long = failed(await run(`printf 'x%.0s' $(seq 1 500) >&2; exit 1`));
  assert.equal(long.length, TOKEN_REASON_MAX_CHARS);
  const noisy = failed(await run(`head -c ${4 * TOKEN_STDERR_MAX_BYTES} /dev/zero | tr '\\0' x >&2; echo >&2; echo 'the last word' >&2; exit 1`));
  assert.equal(noisy, 'the last word', 'stderr is capped to its tail, which holds the last line');
  assert.equal(redactTokens(`a ${token} b eyJhbGciOiJFZERTQSJ9.eyJzdWIi c`), 'a [token] b [token] c');
  assert.equal(redactTokens('see https://accounts.example.com/login and file.tar.gz'), 'see https://accounts.example.com/login and file.tar.gz');
});

test('a reason is one showable line: escape sequences dropped, controls and a lone \\r do not rewrite what doctor shows', async () => {
  const reason = failed(await run(`printf 'fetching...\\rerror: \\033[31mlogin\\033[0m required\\a\\342\\200\\256now\\n' >&2; exit 1`));
  assert.equal(reason, 'error: login required  now');
  assert.doesNotMatch(reason, /[\u0000-\u001f\u007f-\u009f\u202e]/);
});

test('a command spawn refuses at once (a NUL byte) fails with a reason that does not quote it', async () => {
  const reason = failed(await run(`printf 'secret-refresh-credential'\0`));
  assert.equal(reason, 'could not be started (ERR_INVALID_ARG_VALUE)');
});

test('no output, not a token, no exp, expired, too much output: one-line reasons that never quote stdout', async () => {
  assert.equal(failed(await run('true')), 'printed no token');
  const garbage = failed(await run(`echo 'password=hunter2'`));
  assert.equal(garbage, 'printed something that is not a token');
  assert.equal(failed(await run(`printf '%s\\n%s\\n' "$T" "$T"`, { T: fresh() })), 'printed something that is not a token', 'two tokens are not one');
  assert.equal(failed(await run(`printf '%s' "$T"`, { T: jwt({ iat: NOW / 1000 }) })), 'printed a token without an "exp" claim');
  assert.equal(failed(await run(`printf '%s' "$T"`, { T: fresh(600, NOW / 1000 - 600) })), 'printed a token that has already expired');
  assert.equal(failed(await run(`head -c ${TOKEN_MAX_BYTES + 1} /dev/zero | tr '\\0' a`)), `printed more than ${TOKEN_MAX_BYTES} bytes`);
  assert.equal((await parseTokenOutput('a.b', NOW)).ok, false);
});

function alive(pid: number): boolean {
  try {
    // a zombie (state Z) is dead: only its parent's wait is missing
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

test('a command running past its timeout is killed with its whole process group', async () => {
  const dir = tempDir('mbx-token-');
  const pidFile = join(dir, 'pid');
  // the shell starts a background child holding stdout open, then waits: killing only the shell would leave it
  const reason = failed(await run(`sleep 60 & echo $! > '${pidFile}'; wait`, {}, 1000));
  assert.equal(reason, 'timed out after 1 s');
  const pid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(pid > 0);
  // SIGKILL of the group was sent before the run returned; wait (bounded) for the kernel to finish it
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(alive(pid), false, 'the background child of the command is gone too');
});

test('refresh rule: a token is replaced when less than max(60 s, a fifth of its lifetime) is left', () => {
  const tenMinutes: AccessToken = { token: 't', iatMs: NOW, expMs: NOW + 600_000 };
  assert.equal(tokenNeedsRefresh(tenMinutes, NOW + 479_999), false);
  assert.equal(tokenNeedsRefresh(tenMinutes, NOW + 480_000), true, 'a fifth of 10 minutes is 2 minutes');
  const twoMinutes: AccessToken = { token: 't', iatMs: NOW, expMs: NOW + 120_000 };
  assert.equal(tokenNeedsRefresh(twoMinutes, NOW + 59_999), false);
  assert.equal(tokenNeedsRefresh(twoMinutes, NOW + 60_000), true, 'never less than 60 s ahead');
});

test('the cache reuses a fresh token, shares one run between concurrent callers, refreshes on time and after drop', async () => {
  let now = NOW;
  let runs = 0;
  const cache = new TokenCache(() => now);
  const runOnce = async (): Promise<TokenRun> => {
    runs++;
    await new Promise((resolve) => setImmediate(resolve));
    return parseTokenOutput(fresh(600, Math.floor(now / 1000)), now);
  };
  const [one, two] = await Promise.all([cache.get('k', runOnce), cache.get('k', runOnce)]);
  assert.equal(runs, 1, 'concurrent callers share the running command');
  assert.deepEqual(one, two);
  now += 479_000;
  await cache.get('k', runOnce);
  assert.equal(runs, 1, 'still fresh');
  now += 1_000;
  await cache.get('k', runOnce);
  assert.equal(runs, 2, 'refreshed two minutes before exp');
  cache.drop();
  await cache.get('k', runOnce);
  assert.equal(runs, 3, 'a dropped token is fetched again');
  await cache.get('other command', runOnce);
  assert.equal(runs, 4, 'another command (or env) does not reuse the token');
  const failing = await cache.get('bad', () => Promise.resolve({ ok: false, reason: 'nope' }));
  assert.deepEqual(failing, { ok: false, reason: 'nope' });
  await cache.get('bad', () => {
    runs++;
    return Promise.resolve({ ok: false, reason: 'nope' });
  });
  assert.equal(runs, 5, 'a failure is not cached');
});

test('the cache forgets a run that threw (the next caller runs again) and keeps a run going across drop (one run at a time)', async () => {
  const cache = new TokenCache(() => NOW);
  await assert.rejects(
    cache.get('k', () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  let runs = 0;
  let finish: (run: TokenRun) => void = () => {};
  const slow = (): Promise<TokenRun> => {
    runs++;
    return new Promise((resolve) => {
      finish = resolve;
    });
  };
  const first = cache.get('k', slow);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(runs, 1, 'a rejected run is not shared with later callers');
  cache.drop(); // the relay refused the token a caller held while a refresh is running
  const second = cache.get('k', slow);
  assert.equal(runs, 1, 'the caller after drop shares the run going on');
  finish(await parseTokenOutput(fresh(), NOW));
  assert.deepEqual(await first, await second);
  await cache.get('k', slow);
  assert.equal(runs, 1, 'its token was cached');
});
