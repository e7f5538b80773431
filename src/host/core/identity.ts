// The host's identity in its home ($MBX_HOME, default ~/.local/share/agentmbx): config.json, the
// Ed25519 host key, the X25519 enc key, the retired enc keys that still open older mail, and the
// cloud key a hosted relay's account tokens are bound to (made on first need, kept across rotations).
import { readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { encPublicFromPrivate, generateEncKeyPair, generateSigningKey, signingKeyFromSeed, type EncKeyPair, type SigningKey } from '../../protocol/keys.ts';
import { NAME_RE } from '../../protocol/names.ts';
import { isValidPort } from '../../common/port.ts';
import { createPrivateFile } from '../../common/private-file.ts';
import { checkPrivateDir, checkPrivateFile, ensurePrivateDir, HomeError, readPrivateFile, writePrivateFile } from './home-files.ts';
import { HostStore, META_HOST_PUB } from '../store/host-store.ts';

export const DEFAULT_PORT = 7373;

export interface HostConfig {
  v: 1;
  host: string;
  port: number;
  /** address the daemon listens on (default 0.0.0.0) */
  bind?: string;
  /** URL peers use to reach this host (default: derived from the LAN address and port) */
  addr?: string;
}

export interface HostKeys {
  hostKey: SigningKey;
  enc: EncKeyPair;
  /** private X25519 keys retired by rotations, newest first */
  retiredEnc: string[];
}

export interface HomePaths {
  home: string;
  config: string;
  keysDir: string;
  hostKey: string;
  encKey: string;
  /** the Ed25519 cloud key (docs/hosted-relay.md), only on hosts that use a hosted relay */
  cloudKey: string;
  retiredDir: string;
  store: string;
  pendingRotation: string;
}

export function defaultHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.MBX_HOME;
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : join(homedir(), '.local', 'share', 'agentmbx');
}

export function homePaths(home: string): HomePaths {
  const keysDir = join(home, 'keys');
  return {
    home,
    config: join(home, 'config.json'),
    keysDir,
    hostKey: join(keysDir, 'host.key'),
    encKey: join(keysDir, 'enc.key'),
    cloudKey: join(keysDir, 'cloud.key'),
    retiredDir: join(keysDir, 'retired'),
    store: join(home, 'host.db'),
    pendingRotation: join(home, 'rotation.pending.json'),
  };
}

/**
 * Creates the home: keys, the store (the one place a store is made), then config.json. Every value is
 * checked before anything is written, and a home that holds any part of a host (config, keys, store)
 * is refused: a lost store is restored, never replaced by a new one.
 */
export function initHome(home: string, host: string, port: number, listen: Pick<HostConfig, 'bind' | 'addr'> = {}): HostConfig {
  if (!NAME_RE.test(host)) throw new HomeError(`bad host name "${host}": use 2-40 of a-z, 0-9 and -, starting with a letter or digit`, 'invalid');
  if (!isValidPort(port)) throw new HomeError(`bad port ${port}`, 'invalid');
  const paths = homePaths(home);
  ensurePrivateDir(home);
  if (readPrivateFile(paths.config) !== null) throw new HomeError(`${home} already holds a host (config.json exists)`);
  for (const [path, what] of [
    [paths.hostKey, 'keys/host.key'],
    [paths.encKey, 'keys/enc.key'],
    [paths.store, 'host.db'],
  ] as const) {
    if (checkPrivateFile(path)) {
      throw new HomeError(
        `${home} already holds part of a host (${what} exists, config.json does not): put its config.json back, or move the home away before agentmbx init`,
      );
    }
  }
  ensurePrivateDir(paths.keysDir);
  ensurePrivateDir(paths.retiredDir);
  const hostKey = generateSigningKey();
  writePrivateFile(paths.hostKey, `${hostKey.exportSeed()}\n`);
  writePrivateFile(paths.encKey, `${generateEncKeyPair().privateKey}\n`);
  // The store holds opened mail: private like the keys (SQLite gives its -wal/-shm files the same mode).
  createPrivateFile(paths.store);
  const store = HostStore.open(paths.store);
  try {
    store.setMeta(META_HOST_PUB, hostKey.publicKey);
  } finally {
    store.close();
  }
  const config: HostConfig = { v: 1, host, port, ...listen };
  writePrivateFile(paths.config, `${JSON.stringify(config, null, 2)}\n`);
  return config;
}

export function readConfig(home: string): HostConfig {
  const paths = homePaths(home);
  if (!checkPrivateDir(home))
    throw new HomeError(`no host at ${home}: run agentmbx init --host <name>, or set MBX_HOME to the home of an existing host`, 'not-found');
  const text = readPrivateFile(paths.config);
  if (text === null) throw new HomeError(`no host at ${home}: run agentmbx init --host <name>, or set MBX_HOME to the home of an existing host`, 'not-found');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new HomeError(`${paths.config} is not valid JSON`);
  }
  const c = parsed as Partial<HostConfig> | null;
  if (
    c === null ||
    typeof c !== 'object' ||
    c.v !== 1 ||
    typeof c.host !== 'string' ||
    !NAME_RE.test(c.host) ||
    typeof c.port !== 'number' ||
    !isValidPort(c.port)
  ) {
    throw new HomeError(`${paths.config} is malformed`);
  }
  return c as HostConfig;
}

export function writeConfig(home: string, config: HostConfig): void {
  writePrivateFile(homePaths(home).config, `${JSON.stringify(config, null, 2)}\n`);
}

function readKeyFile(path: string): string {
  const text = readPrivateFile(path);
  if (text === null) throw new HomeError(`missing key file ${path}`);
  return text.trim();
}

/** An Ed25519 key file (the host key, the cloud key). */
export function loadSigningKey(path: string): SigningKey {
  const key = signingKeyFromSeed(readKeyFile(path));
  if (key === null) throw new HomeError(`${path} does not hold a valid Ed25519 key`);
  return key;
}

/** The cloud key, created (0600) when the home has none yet; no host-key rotation touches it. */
export function ensureCloudKey(home: string): SigningKey {
  const path = homePaths(home).cloudKey;
  if (readPrivateFile(path) === null) {
    ensurePrivateDir(homePaths(home).keysDir);
    writePrivateFile(path, `${generateSigningKey().exportSeed()}\n`);
  }
  return loadSigningKey(path);
}

export function loadEncKey(path: string): EncKeyPair {
  const privateKey = readKeyFile(path);
  const publicKey = encPublicFromPrivate(privateKey);
  if (publicKey === null) throw new HomeError(`${path} does not hold a valid X25519 key`);
  return { publicKey, privateKey };
}

/** Loads and checks the keys: every file private, no symlinks. */
export function loadKeys(home: string): HostKeys {
  const paths = homePaths(home);
  checkPrivateDir(paths.keysDir);
  const retiredEnc: string[] = [];
  if (checkPrivateDir(paths.retiredDir)) {
    // File names start with the retirement time in ms, so a reverse sort is newest first.
    const names = readdirSync(paths.retiredDir)
      .filter((n) => n.startsWith('enc-') && n.endsWith('.key'))
      .sort()
      .reverse();
    for (const name of names) retiredEnc.push(loadEncKey(join(paths.retiredDir, name)).privateKey);
  }
  return { hostKey: loadSigningKey(paths.hostKey), enc: loadEncKey(paths.encKey), retiredEnc };
}
