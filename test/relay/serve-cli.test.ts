// `agentmbx relay serve` and `relay keygen` as real child processes (protocol.md §6, §7.9; design §1, §2).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { fromBase64 } from '../../src/protocol/base64.ts';
import { fingerprint } from '../../src/protocol/fingerprint.ts';
import { signingKeyFromSeed } from '../../src/protocol/keys.ts';
import { enrolledHost, envelopeItem, testHost, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { runCli, tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';

const SERVE = (dir: string): string[] => ['relay', 'serve', '--store-dir', dir, '--port', '0', '--bind', '127.0.0.1'];
/** The environment of a child that must not inherit a relay key from the test runner. */
const NO_KEY = { MBX_RELAY_KEY: undefined } as unknown as NodeJS.ProcessEnv;

/** Every spelling of a key a careless message might carry. */
function spellings(base64: string): string[] {
  const bytes = fromBase64(base64) as Buffer;
  return [base64, base64.replace(/=+$/, ''), bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
}

test('serve prints one line with URL, fingerprint and epoch; SIGTERM exits 0 and the store reopens', async () => {
  const dir = tempDir('agentmbx-serve-');
  const relay = await spawnRelay(dir);
  assert.match(relay.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.match(relay.fingerprint, /^[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}$/);
  assert.ok(relay.epoch.length > 0);
  const info = (await (await fetch(`${relay.url}/v2/relay/info`)).json()) as { relay_pubkey: string; epoch: string };
  assert.equal(fingerprint(info.relay_pubkey), relay.fingerprint);
  assert.equal(info.epoch, relay.epoch);
  assert.equal(relay.child.stdout().trim().split('\n').length, 1, 'exactly one line at start');

  relay.child.kill('SIGTERM');
  assert.equal(await relay.child.exited, 0);
  const again = await spawnRelay(dir);
  assert.equal(again.fingerprint, relay.fingerprint, 'the same relay key');
  assert.equal(again.epoch, relay.epoch, 'the same store');
});

test('SIGTERM writes the poll summary of the last window before the stop line', async () => {
  const relay = await spawnRelay(tempDir('agentmbx-serve-'));
  const host = await enrolledHost(relay, 'laptop');
  for (let i = 0; i < 3; i += 1) assert.equal((await host.api.pull(0)).status, 200);
  relay.child.kill('SIGTERM');
  assert.equal(await relay.child.exited, 0);
  const lines = relay.child.stdout().trim().split('\n');
  assert.equal(lines.at(-1), 'agentmbx relay stopped');
  const summary = lines.filter((line) => line.includes('"msg":"polls"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    summary.map((l) => [l['polls'], l['hosts']]),
    [[3, 1]],
    relay.child.stdout(),
  );
});

test('a second serve on the same store dir exits non-zero with one line naming the store', async () => {
  const dir = tempDir('agentmbx-serve-');
  const first = await spawnRelay(dir);
  const second = await runCli(SERVE(dir), NO_KEY);
  assert.notEqual(second.code, 0);
  const lines = second.stderr.trim().split('\n');
  assert.equal(lines.length, 1, second.stderr);
  assert.ok(lines[0]?.includes(dir), lines[0]);
  assert.match(lines[0] ?? '', /another agentmbx relay/);
  assert.equal(second.stdout, '');
  assert.equal((await fetch(`${first.url}/v2/relay/info`)).status, 200, 'the first relay is untouched');
});

test('an unknown config key → exit 2 naming it', async () => {
  const dir = tempDir('agentmbx-serve-');
  const config = join(dir, 'relay-config.json');
  writeFileSync(config, JSON.stringify({ max_batch: 10, max_batsh: 20 }));
  const result = await runCli([...SERVE(dir), '--config', config], NO_KEY);
  assert.equal(result.code, 2);
  assert.match(result.stderr, /max_batsh/);
  assert.equal(result.stderr.trim().split('\n').length, 1);
});

test('relay keygen prints a base64 key on stdout and its fingerprint on stderr', async () => {
  const result = await runCli(['relay', 'keygen']);
  assert.equal(result.code, 0);
  const seed = result.stdout.trim();
  assert.match(result.stdout, /^[A-Za-z0-9+/]{43}=\n$/);
  const key = signingKeyFromSeed(seed);
  assert.ok(key);
  assert.equal(result.stderr, `fingerprint ${fingerprint(key.publicKey)}\n`);
  assert.match(result.stderr, /^fingerprint [0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}\n$/);
});

test("MBX_RELAY_KEY of another key than the store's → exit 1, and the message holds no key", async () => {
  const dir = tempDir('agentmbx-serve-');
  const first = await spawnRelay(dir);
  const storeKey = ((await (await fetch(`${first.url}/v2/relay/info`)).json()) as { relay_pubkey: string }).relay_pubkey;
  first.child.kill('SIGTERM');
  assert.equal(await first.child.exited, 0);

  const seed = (await runCli(['relay', 'keygen'])).stdout.trim();
  const other = signingKeyFromSeed(seed);
  assert.ok(other);
  const result = await runCli(SERVE(dir), { MBX_RELAY_KEY: seed });
  assert.equal(result.code, 1);
  assert.equal(result.stdout, '');
  assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  assert.ok(result.stderr.length > 20, 'a message that says what is wrong');
  for (const text of [...spellings(seed), ...spellings(other.publicKey), ...spellings(storeKey)]) {
    assert.ok(!result.stderr.includes(text), `stderr holds key text: ${result.stderr}`);
  }

  const malformed = await runCli(SERVE(dir), { MBX_RELAY_KEY: `${seed.slice(0, 40)}!!!=` });
  assert.equal(malformed.code, 1);
  assert.ok(!malformed.stderr.includes(seed.slice(0, 40)), malformed.stderr);
});

test('the store survives SIGKILL: committed items are there after the restart', async () => {
  const dir = tempDir('agentmbx-serve-');
  const first = await spawnRelay(dir);
  const a = await enrolledHost(first, 'laptop');
  const b = await enrolledHost(first, 'desk');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const env = sealedEnvelope(a, b, Date.now());
    const result = ((await a.api.push([envelopeItem(env.id, [{ host: b, wire: env.wire }])])).body['results'] as Array<{ status: string }>)[0];
    assert.equal(result?.status, 'accepted');
    ids.push(env.id);
  }
  first.child.kill('SIGKILL');
  assert.equal(await first.child.exited, 'SIGKILL');

  const second = await spawnRelay(dir);
  assert.equal(second.epoch, first.epoch);
  const b2: TestHost = { ...testHost(second, 'desk', b.key), enc: b.enc };
  const page = (await b2.api.pull(0)).body as { items: Array<{ item_id: string }> };
  assert.deepEqual(
    page.items.map((i) => i.item_id),
    ids,
  );
});

test('a busy port refuses the start before the store is touched: one line, exit 1, the store directory unchanged', async () => {
  const dir = tempDir('agentmbx-serve-');
  const first = await spawnRelay(dir);
  first.child.kill('SIGTERM');
  assert.equal(await first.child.exited, 0);
  const snapshot = (): Record<string, string> =>
    Object.fromEntries(
      readdirSync(dir)
        .sort()
        .map((name) => [
          name,
          createHash('sha256')
            .update(readFileSync(join(dir, name)))
            .digest('hex'),
        ]),
    );
  const before = snapshot();
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = busy.address() as { port: number };
    const serve = ['relay', 'serve', '--store-dir', dir, '--bind', '127.0.0.1'];
    const inUse = `127.0.0.1:${port} is already in use (another relay or program listens there)`;
    const text = await runCli([...serve, '--port', String(port)]);
    assert.deepEqual([text.code, text.stdout, text.stderr], [1, '', `agentmbx: ${inUse}: change --port (env PORT) or --bind\n`]);
    const json = await runCli([...serve, '--port', String(port), '--json']);
    assert.deepEqual([json.code, JSON.parse(json.stdout), json.stderr], [1, { error: `${inUse}: change --port (env PORT) or --bind`, code: 'FAILURE' }, '']);
    const metrics = await runCli([...serve, '--port', '0', '--metrics-bind', `127.0.0.1:${port}`]);
    assert.deepEqual([metrics.code, metrics.stdout, metrics.stderr], [1, '', `agentmbx: ${inUse}: change --metrics-bind\n`]);
  } finally {
    await new Promise<void>((resolve) => busy.close(() => resolve()));
  }
  assert.deepEqual(snapshot(), before, 'no heartbeat, no epoch rotation, no lock left behind');
  const again = await spawnRelay(dir);
  assert.equal(again.epoch, first.epoch, 'the epoch the store had');
});

test('a bad --log-level or MBX_RELAY_LOG_LEVEL exits 2 naming the levels', async () => {
  const dir = tempDir('agentmbx-serve-');
  const message = (level: string) => `agentmbx: bad log level "${level}": one of debug, info, warn, error, silent\n`;
  const flag = await runCli(['relay', 'serve', '--store-dir', dir, '--port', '0', '--log-level', 'loud']);
  assert.deepEqual([flag.code, flag.stderr], [2, message('loud')]);
  const env = await runCli(['relay', 'serve', '--store-dir', dir, '--port', '0'], { MBX_RELAY_LOG_LEVEL: 'trace' });
  assert.deepEqual([env.code, env.stderr], [2, message('trace')]);
  assert.deepEqual(readdirSync(dir), [], 'nothing created');
});
