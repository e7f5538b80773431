// The relay's own Ed25519 identity (design §1): MBX_RELAY_KEY (a deploy secret) or relay.key in the
// store directory, created on first start. The store separately records which key it belongs to and
// refuses another one. No message here ever contains key material in any encoding.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fsyncPath } from '../../common/fsync-path.ts';
import { failPoint } from '../../failpoint.ts';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { generateSigningKey, signingKeyFromSeed, type SigningKey } from '../../protocol/keys.ts';

export const RELAY_KEY_FILE = 'relay.key';
/** Bytes read from relay.key at most: a base64 seed is 44 characters; anything longer is not a key. */
export const RELAY_KEY_FILE_MAX_BYTES = 256;

/** A relay key that cannot be used; the message says what to do and never holds key material. */
export class RelayKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RelayKeyError';
  }
}

function errnoCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? 'unknown error';
}

/**
 * The relay's signing key: from MBX_RELAY_KEY when set, else from <storeDir>/relay.key, which is
 * created (0600, in a 0700 directory) when missing. Throws RelayKeyError on anything unusable.
 */
export function loadOrCreateRelayKey(storeDir: string, env: NodeJS.ProcessEnv): SigningKey {
  const fromEnv = env.MBX_RELAY_KEY;
  if (fromEnv !== undefined) {
    // An empty secret is a deploy mistake; falling back to relay.key would start under a new identity.
    if (fromEnv.trim() === '') {
      throw new RelayKeyError(
        `MBX_RELAY_KEY is set but empty: set it to a key from \`agentmbx relay keygen\`, or unset it to use ${join(storeDir, RELAY_KEY_FILE)}`,
      );
    }
    const key = signingKeyFromSeed(fromEnv);
    if (key === null) throw new RelayKeyError('MBX_RELAY_KEY is not a base64 32-byte Ed25519 private key');
    return key;
  }
  const path = join(storeDir, RELAY_KEY_FILE);
  return readRelayKeyFile(path) ?? createRelayKeyFile(storeDir, path);
}

/** The key in `path`, or null when there is no such file. */
function readRelayKeyFile(path: string): SigningKey | null {
  let fd: number;
  try {
    // O_NOFOLLOW: the checks below then hold for the very file that is read (no lstat/open race)
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new RelayKeyError(`${path} is a symbolic link; relay.key must be a regular file (replace the link with the file itself)`);
    throw new RelayKeyError(`cannot read ${path}: ${code}`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new RelayKeyError(`${path} is not a regular file`);
    const loose = stat.mode & 0o077;
    if (loose !== 0) {
      const mode = (stat.mode & 0o777).toString(8).padStart(4, '0');
      throw new RelayKeyError(`${path} is open to group or others (mode ${mode}); run: chmod 600 ${path}`);
    }
    const buffer = Buffer.alloc(RELAY_KEY_FILE_MAX_BYTES + 1);
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.subarray(0, length).toString('utf8');
    buffer.fill(0);
    const key = length > RELAY_KEY_FILE_MAX_BYTES ? null : signingKeyFromSeed(text);
    if (key === null) throw new RelayKeyError(`${path} does not hold a base64 32-byte Ed25519 private key`);
    return key;
  } finally {
    closeSync(fd);
  }
}

/**
 * Writes a fresh key to a temporary file, fsyncs it, then hard-links it to relay.key: a crash leaves
 * either no relay.key or a whole one, and link (unlike rename) never replaces a key that another
 * process created meanwhile; in that case its key is the one used.
 */
function createRelayKeyFile(storeDir: string, path: string): SigningKey {
  const key = generateSigningKey();
  const temp = join(storeDir, `.${RELAY_KEY_FILE}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    mkdirSync(storeDir, { recursive: true, mode: 0o700 });
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, `${key.exportSeed()}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    throw new RelayKeyError(`cannot create ${path}: ${errnoCode(err)}`);
  }
  failPoint('relay-key-before-link');
  try {
    linkSync(temp, path);
  } catch (err) {
    if (errnoCode(err) !== 'EEXIST') throw new RelayKeyError(`cannot create ${path}: ${errnoCode(err)}`);
  } finally {
    unlinkSync(temp);
  }
  // the new directory entry must be durable: a crash after start must not lose the relay's identity
  fsyncPath(storeDir);
  // read back through the same checks, which also picks up a key another process linked first
  const stored = readRelayKeyFile(path);
  if (stored === null) throw new RelayKeyError(`${path} vanished while it was being created`);
  return stored;
}

/** A new relay key for `agentmbx relay keygen`: the base64 private key and its public fingerprint. */
export function generateRelayKeyText(): { privateKey: string; fingerprint: string } {
  const key = generateSigningKey();
  return { privateKey: key.exportSeed(), fingerprint: fingerprint(key.publicKey) };
}
