import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { describe, test } from 'node:test';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { generateSigningKey, signingKeyFromSeed } from '../../../src/protocol/keys.ts';
import { RELAY_KEY_FILE_MAX_BYTES, RelayKeyError, generateRelayKeyText, loadOrCreateRelayKey } from '../../../src/relay/ops/relay-key.ts';
import { REPO_ROOT, spawnNode, tempDir } from '../../helpers/processes.ts';

/** Every private key a test handed to the module, and every message it threw: checked together at the end. */
const secrets: string[] = [];
const messages: string[] = [];

function relayKeyError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof RelayKeyError, `expected RelayKeyError, got ${String(err)}`);
    messages.push(err.message);
    return err.message;
  }
  assert.fail('expected a RelayKeyError');
}

/** A fresh seed, remembered as a secret. */
function newSeed(): string {
  const seed = generateSigningKey().exportSeed();
  secrets.push(seed);
  return seed;
}

function writeKeyFile(dir: string, text: string, mode = 0o600): string {
  const path = join(dir, 'relay.key');
  writeFileSync(path, text, { mode });
  chmodSync(path, mode);
  return path;
}

const mode = (path: string): number => statSync(path).mode & 0o777;

describe('relay.key', () => {
  test('is created 0600 (in a 0700 store dir) on first start and reused after', () => {
    const storeDir = join(tempDir(), 'store');
    const first = loadOrCreateRelayKey(storeDir, {});
    const path = join(storeDir, 'relay.key');
    assert.equal(mode(path), 0o600);
    assert.equal(mode(storeDir), 0o700);
    const text = readFileSync(path, 'utf8');
    secrets.push(text.trim());
    assert.equal(text, `${first.exportSeed()}\n`);
    assert.equal(loadOrCreateRelayKey(storeDir, {}).publicKey, first.publicKey);
    assert.deepEqual(readdirSync(storeDir), ['relay.key'], 'no temporary file is left behind');
  });

  test('an existing key file is used as it is', () => {
    const dir = tempDir();
    const seed = newSeed();
    writeKeyFile(dir, `${seed}\n`);
    assert.equal(loadOrCreateRelayKey(dir, {}).publicKey, signingKeyFromSeed(seed)?.publicKey);
    assert.equal(readFileSync(join(dir, 'relay.key'), 'utf8'), `${seed}\n`);
  });

  test('a symbolic link is refused, even to a good 0600 key', () => {
    const dir = tempDir();
    const target = join(dir, 'elsewhere.key');
    writeFileSync(target, newSeed(), { mode: 0o600 });
    const storeDir = join(dir, 'store');
    mkdirSync(storeDir);
    symlinkSync(target, join(storeDir, 'relay.key'));
    assert.match(
      relayKeyError(() => loadOrCreateRelayKey(storeDir, {})),
      /relay\.key is a symbolic link; relay\.key must be a regular file/,
    );
  });

  test('a key file open to group or others is refused with the fix', () => {
    const dir = tempDir();
    const seed = newSeed();
    for (const loose of [0o644, 0o640, 0o604, 0o620, 0o660]) {
      const path = writeKeyFile(dir, seed, loose);
      const message = relayKeyError(() => loadOrCreateRelayKey(dir, {}));
      assert.equal(message, `${path} is open to group or others (mode ${loose.toString(8).padStart(4, '0')}); run: chmod 600 ${path}`);
    }
    chmodSync(join(dir, 'relay.key'), 0o600);
    assert.equal(loadOrCreateRelayKey(dir, {}).publicKey, signingKeyFromSeed(seed)?.publicKey);
    chmodSync(join(dir, 'relay.key'), 0o400);
    assert.equal(loadOrCreateRelayKey(dir, {}).publicKey, signingKeyFromSeed(seed)?.publicKey);
  });

  test('something other than a regular file is refused', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'relay.key'), { mode: 0o700 });
    assert.match(
      relayKeyError(() => loadOrCreateRelayKey(dir, {})),
      /relay\.key is not a regular file$/,
    );
  });

  test('a malformed key file is refused without quoting it', () => {
    const seed = newSeed();
    const raw = Buffer.from(seed, 'base64');
    const bad = [
      '',
      'not a key',
      raw.toString('hex'),
      raw.toString('base64url'),
      raw.subarray(1).toString('base64'),
      `${seed}${seed}`,
      `${seed.slice(0, -1)}`,
      `${seed}\n${'x'.repeat(RELAY_KEY_FILE_MAX_BYTES)}`,
    ];
    for (const text of bad) {
      secrets.push(text);
      const dir = tempDir();
      const path = writeKeyFile(dir, text);
      assert.equal(
        relayKeyError(() => loadOrCreateRelayKey(dir, {})),
        `${path} does not hold a base64 32-byte Ed25519 private key`,
      );
      assert.equal(readFileSync(path, 'utf8'), text, 'a bad key file is never replaced');
    }
  });

  test('a crash while creating leaves no relay.key, and the next start makes a whole one', async () => {
    const storeDir = join(tempDir(), 'store');
    const moduleUrl = pathToFileURL(join(REPO_ROOT, 'src', 'relay', 'ops', 'relay-key.ts')).href;
    const env: NodeJS.ProcessEnv = { ...process.env, MBX_FAILPOINT: 'relay-key-before-link' };
    delete env.MBX_RELAY_KEY;
    const child = spawnNode(
      [
        '--input-type=module',
        '-e',
        `import { loadOrCreateRelayKey } from ${JSON.stringify(moduleUrl)}; loadOrCreateRelayKey(${JSON.stringify(storeDir)}, {}); console.log('created');`,
      ],
      { env },
    );
    assert.equal(await child.exited, 'SIGKILL');
    assert.ok(!child.stdout().includes('created'));
    assert.equal(existsSync(join(storeDir, 'relay.key')), false);
    const key = loadOrCreateRelayKey(storeDir, {});
    assert.equal(loadOrCreateRelayKey(storeDir, {}).publicKey, key.publicKey);
    secrets.push(key.exportSeed());
  });
});

describe('MBX_RELAY_KEY', () => {
  test('is used instead of relay.key, and nothing is written', () => {
    const dir = tempDir();
    const seed = newSeed();
    assert.equal(loadOrCreateRelayKey(join(dir, 'store'), { MBX_RELAY_KEY: seed }).publicKey, signingKeyFromSeed(seed)?.publicKey);
    assert.equal(existsSync(join(dir, 'store')), false);
    writeKeyFile(dir, newSeed());
    assert.equal(loadOrCreateRelayKey(dir, { MBX_RELAY_KEY: ` ${seed}\n` }).publicKey, signingKeyFromSeed(seed)?.publicKey);
  });

  test('malformed: refused with a fixed message that holds no encoding of the value', () => {
    const seed = newSeed();
    const raw = Buffer.from(seed, 'base64');
    const dir = tempDir();
    const bad = [
      raw.toString('hex'),
      raw.toString('base64url'),
      raw.subarray(1).toString('base64'),
      `${seed}x`,
      seed.replace(/=$/, ''),
      Buffer.concat([raw, raw]).toString('base64'),
      'hunter2',
    ];
    for (const value of bad) {
      secrets.push(value);
      assert.equal(
        relayKeyError(() => loadOrCreateRelayKey(dir, { MBX_RELAY_KEY: value })),
        'MBX_RELAY_KEY is not a base64 32-byte Ed25519 private key',
      );
    }
    assert.equal(existsSync(join(dir, 'relay.key')), false, 'a bad variable never falls back to a new relay.key');
  });

  test('set but empty: refused, no relay.key made', () => {
    const dir = tempDir();
    assert.match(
      relayKeyError(() => loadOrCreateRelayKey(dir, { MBX_RELAY_KEY: ' ' })),
      /^MBX_RELAY_KEY is set but empty/,
    );
    assert.equal(existsSync(join(dir, 'relay.key')), false);
  });
});

test('generateRelayKeyText gives a usable private key and its fingerprint', () => {
  const a = generateRelayKeyText();
  const b = generateRelayKeyText();
  secrets.push(a.privateKey, b.privateKey);
  const key = signingKeyFromSeed(a.privateKey);
  assert.ok(key !== null);
  assert.equal(a.fingerprint, fingerprint(key.publicKey));
  assert.match(a.fingerprint, /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/);
  assert.notEqual(a.privateKey, b.privateKey);
});

test('a loaded key does not show its private half when logged', () => {
  const seed = newSeed();
  const key = loadOrCreateRelayKey(tempDir(), { MBX_RELAY_KEY: seed });
  assert.ok(!inspect(key, { showHidden: true, depth: 5 }).includes(seed));
  assert.ok(!JSON.stringify({ key }).includes(seed));
});

// Tests of a file run in order, so this one sees every message thrown above.
test('no thrown message holds any key or key-like value, in any encoding', () => {
  assert.ok(messages.length >= 20, `expected the tests to collect messages, got ${messages.length}`);
  for (const secret of secrets.filter((s) => s.trim().length >= 8)) {
    const raw = Buffer.from(secret.trim(), 'base64');
    const encodings = [secret.trim(), raw.toString('hex'), raw.toString('base64'), raw.toString('base64url')]
      .filter((text) => text.length >= 8)
      .flatMap((text) => [text, text.slice(0, 12), text.slice(-12)]);
    for (const message of messages) {
      for (const encoded of encodings) assert.ok(!message.includes(encoded), `a message holds key material: ${message}`);
    }
  }
});
