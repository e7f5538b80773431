// The relay's settings (protocol.md §6): the defaults of the reference deployment, the optional
// JSON config file that overrides them, and the flags and environment of `agentmbx relay serve`.
// Every value is checked at start-up; a bad one stops the relay with a message naming it. Messages
// never echo a string value (an operator may paste a secret into the wrong place), only numbers.
import { readFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_GROUP_COMMIT, MAX_GROUP_COMMIT_ITEMS, MAX_GROUP_COMMIT_WAIT_MS } from './store/group-commit-policy.ts';
import { MAX_HOP_VERIFY_THREADS } from './crypto/hop-verify-pool.ts';

export type TrustProxy = 'none' | 'xff' | 'cloudflare';

/** Who may enrol (design §8): the host-key challenge (default) or account tokens (the hosted relay). */
export type EnrolmentAuthorityName = 'host-key' | 'account-token';

/** The account-token authority's settings (docs/hosted-relay.md). */
export interface AccountTokenSettings {
  /** the accounts issuer, compared exactly with a token's `iss` */
  token_issuer: string;
  /** where the issuer's JWKS is fetched (https, or http on a loopback address) */
  token_jwks_url: string;
  /** this relay's own public URL, compared exactly with a token's `aud` */
  token_audience: string;
}

/** The limits a relay advertises in `GET /v2/relay/info` (protocol.md §3.1). Sizes are raw wire bytes. */
export interface RelayLimits {
  max_item_bytes: number;
  max_batch: number;
  max_pull: number;
  max_pull_bytes: number;
  max_targets: number;
  /** days, fractions allowed */
  retention_days: number;
  max_queue_items: number;
  max_queue_bytes: number;
  max_sender_items: number;
  max_sender_bytes: number;
  /** per proven account (the AgentMBX name; `max_account_items` is accepted as an alias) */
  max_owner_items: number;
  max_owner_bytes: number;
}

export interface RelayConfig {
  limits: RelayLimits;
  /** push requests per sender key per minute (protocol.md §7.3) */
  pushes_per_minute: number;
  /** challenge + enrol + rotate calls per client address per minute (protocol.md §7.4) */
  enrol_per_minute: number;
  /** request body cap of every route except challenge, enrol and rotate */
  max_body_bytes: number;
  /** period of the expiry sweep after the one at start */
  sweep_interval_ms: number;
  /** where the client address of a request comes from */
  trust_proxy: TrustProxy;
  /** write transactions committed together at most (group commit; 1 turns grouping off) */
  group_commit_max_items: number;
  /** how long a commit group may stay open gathering queued writes */
  group_commit_max_wait_ms: number;
  /** worker threads checking hop signatures (0: on the event loop) */
  hop_verify_threads: number;
  /** present when `enrolment_authority` is "account-token"; absent: the host-key challenge */
  account_token?: AccountTokenSettings;
}

/** Older names of the per-account quotas, still accepted in a config file (and advertised beside the new ones). */
const OWNER_QUOTA_ALIASES = Object.freeze({ max_account_items: 'max_owner_items', max_account_bytes: 'max_owner_bytes' } as const);
type OwnerQuotaAlias = keyof typeof OWNER_QUOTA_ALIASES;

/** The flat keys a config file may hold, each optional. */
export type RelayConfigFile = Partial<
  RelayLimits & Record<OwnerQuotaAlias, number> & Omit<RelayConfig, 'limits' | 'account_token'> & AccountTokenSettings & { enrolment_authority: EnrolmentAuthorityName }
>;

const MiB = 1024 * 1024;
const DAY_MS = 86_400_000;

export const DEFAULT_LIMITS: RelayLimits = Object.freeze({
  max_item_bytes: 524_288,
  max_batch: 200,
  max_pull: 500,
  max_pull_bytes: 8 * MiB,
  max_targets: 64,
  retention_days: 14,
  max_queue_items: 10_000,
  max_queue_bytes: 50 * MiB,
  max_sender_items: 2_000,
  max_sender_bytes: 20 * MiB,
  max_owner_items: 10_000,
  max_owner_bytes: 50 * MiB,
});

export const DEFAULT_CONFIG: RelayConfig = Object.freeze({
  limits: DEFAULT_LIMITS,
  pushes_per_minute: 120,
  enrol_per_minute: 30,
  max_body_bytes: 8 * MiB,
  sweep_interval_ms: 600_000,
  trust_proxy: 'none',
  group_commit_max_items: DEFAULT_GROUP_COMMIT.maxItems,
  group_commit_max_wait_ms: DEFAULT_GROUP_COMMIT.maxWaitMs,
  hop_verify_threads: 1,
});

// Fixed caps of protocol.md §6. They bound memory or protocol timing, so they are not configurable.
/** Body cap of challenge, enrol and rotate: these routes need no auth, so their bodies stay tiny. */
export const ENROL_BODY_MAX_BYTES = 8192;
/** Live (not revoked) enrolments a relay admits; enrolment is free, so its table is capped. */
export const MAX_LIVE_ENROLMENTS = 100_000;
/** Open challenges held in memory at once; over it a challenge request answers 503. */
export const MAX_OPEN_CHALLENGES = 10_000;
/** Relay processes `relay serve --workers` starts at most (each is a whole process with its own memory). */
export const MAX_WORKERS = 64;
/** A challenge is single use and dies after this long. */
export const CHALLENGE_LIFE_MS = 300_000;
/** Client addresses tracked by the enrolment rate limiter (an in-memory table). */
export const MAX_RATE_ADDRESSES = 50_000;
/** A name carried by more live enrolments than this is ambiguous to v1 name lookups. */
export const CROWDED_NAME_HOSTS = 16;
/** A sender list whose iat is further ahead of the relay clock is refused (it could freeze the list); the rule lives with the record. */
export { SENDER_LIST_MAX_FUTURE_MS } from '../protocol/records/sender-list.ts';
/** Dedup rows outlive retention by this many days, so a late retry of an expired item is still a duplicate. */
export const DEDUP_HORIZON_EXTRA_DAYS = 7;
/** How often a running relay writes its heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 30_000;

/** Where the relay keeps its store and relay.key when neither --store-dir nor MBX_RELAY_DIR says. */
export const DEFAULT_STORE_SUBDIR = join('.local', 'share', 'agentmbx-relay');
export const DEFAULT_PORT = 7374;
export const DEFAULT_BIND = '127.0.0.1';

/** Longest retention accepted (100 years): keeps every expiry time a safe integer and a valid Date. */
export const MAX_RETENTION_DAYS = 36_500;
/** Longest sweep period: Node timers fire at once for delays above 2^31−1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Shortest sweep period: a sweep takes the single writer, so it must not run back to back. */
const MIN_SWEEP_INTERVAL_MS = 100;

/** A setting, flag or environment variable that stops start-up; the message names it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Rule =
  | { kind: 'integer'; min: number; max: number }
  | { kind: 'days' }
  | { kind: 'trust' }
  | { kind: 'authority' }
  | { kind: 'text' };

/** Longest issuer, JWKS URL or audience accepted. */
const MAX_SETTING_CHARS = 2048;

const positiveInteger: Rule = { kind: 'integer', min: 1, max: Number.MAX_SAFE_INTEGER };

const RULES = new Map<keyof RelayConfigFile, Rule>([
  ['max_item_bytes', positiveInteger],
  ['max_batch', positiveInteger],
  ['max_pull', positiveInteger],
  ['max_pull_bytes', positiveInteger],
  ['max_targets', positiveInteger],
  ['retention_days', { kind: 'days' }],
  ['max_queue_items', positiveInteger],
  ['max_queue_bytes', positiveInteger],
  ['max_sender_items', positiveInteger],
  ['max_sender_bytes', positiveInteger],
  ['max_owner_items', positiveInteger],
  ['max_owner_bytes', positiveInteger],
  ['max_account_items', positiveInteger],
  ['max_account_bytes', positiveInteger],
  ['pushes_per_minute', positiveInteger],
  ['enrol_per_minute', positiveInteger],
  // below the fixed small-route cap would make a push body smaller than an enrol body
  ['max_body_bytes', { kind: 'integer', min: ENROL_BODY_MAX_BYTES, max: Number.MAX_SAFE_INTEGER }],
  ['sweep_interval_ms', { kind: 'integer', min: MIN_SWEEP_INTERVAL_MS, max: MAX_TIMER_MS }],
  ['trust_proxy', { kind: 'trust' }],
  ['group_commit_max_items', { kind: 'integer', min: 1, max: MAX_GROUP_COMMIT_ITEMS }],
  ['group_commit_max_wait_ms', { kind: 'integer', min: 1, max: MAX_GROUP_COMMIT_WAIT_MS }],
  ['hop_verify_threads', { kind: 'integer', min: 0, max: MAX_HOP_VERIFY_THREADS }],
  ['enrolment_authority', { kind: 'authority' }],
  ['token_issuer', { kind: 'text' }],
  ['token_jwks_url', { kind: 'text' }],
  ['token_audience', { kind: 'text' }],
]);

const LIMIT_KEYS = Object.keys(DEFAULT_LIMITS) as Array<keyof RelayLimits>;

/** What a bad value was, without echoing text (it may be a secret pasted into the wrong place). */
function describeValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return 'a string';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}

function checkValue(key: keyof RelayConfigFile, rule: Rule, value: unknown, where: string): number | string {
  switch (rule.kind) {
    case 'authority':
      if (value !== 'host-key' && value !== 'account-token') throw new ConfigError(`${where}${key} must be "host-key" or "account-token" (got ${describeValue(value)})`);
      return value;
    case 'text':
      if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_SETTING_CHARS) {
        throw new ConfigError(`${where}${key} must be a non-empty string of at most ${MAX_SETTING_CHARS} characters (got ${describeValue(value)})`);
      }
      return value;
    case 'trust':
      if (typeof value !== 'string') throw new ConfigError(`${where}${key} must be "xff", "cloudflare" or "none" (got ${describeValue(value)})`);
      return parseTrustProxy(value, `${where}${key}`);
    case 'days':
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_RETENTION_DAYS || Math.round(value * DAY_MS) < 1) {
        throw new ConfigError(`${where}${key} must be a positive number of days up to ${MAX_RETENTION_DAYS}, fractions allowed (got ${describeValue(value)})`);
      }
      return value;
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < rule.min || value > rule.max) {
        const range = rule.max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${rule.min}` : `an integer from ${rule.min} to ${rule.max}`;
        throw new ConfigError(`${where}${key} must be ${range} (got ${describeValue(value)})`);
      }
      return value;
  }
}

/** Checks an object of config keys (a parsed file, or settings built in code); `where` prefixes messages. */
function validateConfigObject(object: unknown, where: string): RelayConfigFile {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    throw new ConfigError(`${where}must be a JSON object of settings (got ${describeValue(object)})`);
  }
  const out: Record<string, number | string> = {};
  for (const [key, value] of Object.entries(object)) {
    const rule = RULES.get(key as keyof RelayConfigFile);
    if (rule === undefined) {
      throw new ConfigError(`${where}unknown key ${JSON.stringify(key)}; known keys: ${[...RULES.keys()].join(', ')}`);
    }
    out[key] = checkValue(key as keyof RelayConfigFile, rule, value, where);
  }
  return foldOwnerQuotaAliases(out as RelayConfigFile, where);
}

/** Moves an older quota name onto its current one; both given with different values is an error. */
function foldOwnerQuotaAliases(file: RelayConfigFile, where: string): RelayConfigFile {
  const out = { ...file };
  for (const [alias, name] of Object.entries(OWNER_QUOTA_ALIASES) as Array<[OwnerQuotaAlias, keyof RelayLimits]>) {
    const value = out[alias];
    if (value === undefined) continue;
    const current = out[name];
    if (current !== undefined && current !== value) {
      throw new ConfigError(`${where}${name} (${current}) and its older name ${alias} (${value}) differ; give one of them`);
    }
    out[name] = value;
    delete out[alias];
  }
  return out;
}

/** V8 quotes a stretch of the input in some JSON errors; keep the reason and position only. */
function jsonReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/, (?:\.\.\.)?".*$/s, '');
}

/**
 * Parses the text of a `--config` file: a JSON object whose optional keys override protocol.md §6.
 * An unknown key, a bad value or broken JSON throws ConfigError naming `source` and the key.
 */
export function parseConfigFile(text: string, source: string): RelayConfigFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (err) {
    throw new ConfigError(`relay config ${source} is not valid JSON: ${jsonReason(err)}`);
  }
  return validateConfigObject(parsed, `relay config ${source}: `);
}

/** `xff`, `cloudflare` or `none` (any case); anything else throws ConfigError naming `source`. */
export function parseTrustProxy(value: string, source: string): TrustProxy {
  const mode = value.trim().toLowerCase();
  if (mode === 'xff' || mode === 'cloudflare' || mode === 'none') return mode;
  throw new ConfigError(`${source} must be "xff", "cloudflare" or "none"`);
}

/** An environment variable, with an empty or blank value counted as unset. */
function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The effective settings: defaults of protocol.md §6, overridden by the file's keys; trust_proxy
 * comes from the flag, else MBX_RELAY_TRUST_PROXY, else the file, else 'none'.
 */
export function resolveRelayConfig(input: { file?: RelayConfigFile; trustProxyFlag?: string; env: NodeJS.ProcessEnv }): RelayConfig {
  const file = validateConfigObject(input.file ?? {}, 'relay config: ');
  const limits = { ...DEFAULT_LIMITS };
  for (const key of LIMIT_KEYS) {
    const value = file[key];
    if (value !== undefined) limits[key] = value;
  }
  // only the winning source is read: a flag overrides even a malformed variable
  const envTrust = envValue(input.env, 'MBX_RELAY_TRUST_PROXY');
  const trust_proxy = input.trustProxyFlag !== undefined ? parseTrustProxy(input.trustProxyFlag, '--trust-proxy')
    : envTrust !== undefined ? parseTrustProxy(envTrust, 'MBX_RELAY_TRUST_PROXY')
    : file.trust_proxy ?? DEFAULT_CONFIG.trust_proxy;
  return {
    limits,
    pushes_per_minute: file.pushes_per_minute ?? DEFAULT_CONFIG.pushes_per_minute,
    enrol_per_minute: file.enrol_per_minute ?? DEFAULT_CONFIG.enrol_per_minute,
    max_body_bytes: file.max_body_bytes ?? DEFAULT_CONFIG.max_body_bytes,
    sweep_interval_ms: file.sweep_interval_ms ?? DEFAULT_CONFIG.sweep_interval_ms,
    trust_proxy,
    group_commit_max_items: file.group_commit_max_items ?? DEFAULT_CONFIG.group_commit_max_items,
    group_commit_max_wait_ms: file.group_commit_max_wait_ms ?? DEFAULT_CONFIG.group_commit_max_wait_ms,
    hop_verify_threads: file.hop_verify_threads ?? DEFAULT_CONFIG.hop_verify_threads,
    ...accountTokenSettings(file),
  };
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The account-token settings when the file chooses that authority; every one of them is then required. */
function accountTokenSettings(file: RelayConfigFile): { account_token?: AccountTokenSettings } {
  const tokenKeys = ['token_issuer', 'token_jwks_url', 'token_audience'] as const;
  if (file.enrolment_authority !== 'account-token') {
    const stray = tokenKeys.filter((key) => file[key] !== undefined);
    if (stray.length > 0) throw new ConfigError(`relay config: ${stray.join(', ')} only apply with enrolment_authority "account-token"`);
    return {};
  }
  const missing = tokenKeys.filter((key) => file[key] === undefined);
  if (missing.length > 0) throw new ConfigError(`relay config: enrolment_authority "account-token" needs ${missing.join(', ')}`);
  const settings = { token_issuer: file.token_issuer as string, token_jwks_url: file.token_jwks_url as string, token_audience: file.token_audience as string };
  let jwks: URL;
  try {
    jwks = new URL(settings.token_jwks_url);
  } catch {
    throw new ConfigError('relay config: token_jwks_url must be an absolute URL');
  }
  if (!(jwks.protocol === 'https:' || (jwks.protocol === 'http:' && LOOPBACK_HOSTS.has(jwks.hostname)))) {
    throw new ConfigError('relay config: token_jwks_url must use https (plain http only on a loopback address)');
  }
  return { account_token: settings };
}

/** How long an item lives unacked, in milliseconds. */
export function retentionMs(config: RelayConfig): number {
  return Math.round(config.limits.retention_days * DAY_MS);
}

/** How long a dedup row lives after its item was accepted: retention + 7 days (protocol.md §6). */
export function dedupHorizonMs(config: RelayConfig): number {
  return retentionMs(config) + DEDUP_HORIZON_EXTRA_DAYS * DAY_MS;
}

export interface ServeFlags {
  storeDir?: string;
  store?: string;
  port?: string;
  bind?: string;
  config?: string;
  trustProxy?: string;
  metricsBind?: string;
  workers?: string;
}

export interface ServeOptions {
  /** absolute path of the store directory (relay.db, relay.lock, relay.key) */
  storeDir: string;
  /** the store when it is not the SQLite store in storeDir: a postgres:// URL (--store, MBX_RELAY_STORE) */
  store?: string;
  port: number;
  bind: string;
  /** absolute path of the config file that was read, if any */
  configPath: string | null;
  config: RelayConfig;
  /** where /metrics and /healthz are served apart from the relay's port (--metrics-bind), if anywhere */
  metricsBind?: { host: string; port: number };
  /** relay processes serving the port (--workers, MBX_RELAY_WORKERS; default: the machine's available parallelism); 1 is a lone relay */
  workers: number;
}

/** `--workers` or MBX_RELAY_WORKERS: an integer from 1 to MAX_WORKERS. */
function parseWorkers(text: string, source: string): number {
  const workers = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(workers >= 1 && workers <= MAX_WORKERS)) throw new ConfigError(`${source} must be an integer from 1 to ${MAX_WORKERS}`);
  return workers;
}

/** Expands a leading `~` (env files and `--flag=~/x` reach us unexpanded by a shell). */
function expandHome(path: string, env: NodeJS.ProcessEnv): string {
  if (path !== '~' && !path.startsWith('~/')) return path;
  return join(env.HOME ?? homedir(), path.slice(1));
}

function parsePort(text: string, source: string): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port <= 65_535)) throw new ConfigError(`${source} must be an integer from 0 to 65535`);
  return port;
}

/** `HOST:PORT` or `[IPv6]:PORT` of --metrics-bind. */
export function parseMetricsBind(text: string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim());
  if (match === null) throw new ConfigError('--metrics-bind must be HOST:PORT, for example 127.0.0.1:9464 or [::1]:9464');
  return { host: match[1] ?? match[2] ?? '', port: parsePort(match[3] ?? '', '--metrics-bind port') };
}

function nonEmptyFlag(value: string | undefined, flag: string): string | undefined {
  if (value !== undefined && value.trim() === '') throw new ConfigError(`${flag} must not be empty`);
  return value;
}

function readConfigText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable');
    throw new ConfigError(`cannot read relay config ${path}: ${reason}`);
  }
}

/**
 * Everything `agentmbx relay serve` needs to start, from its flags and environment:
 * store dir = --store-dir, MBX_RELAY_DIR, ~/.local/share/agentmbx-relay; store = --store, MBX_RELAY_STORE
 * (a postgres:// URL; default the SQLite store in the store dir); port = --port, PORT, 7374;
 * bind = --bind, 127.0.0.1; settings from --config (optional) and resolveRelayConfig.
 */
export function resolveServeOptions(flags: ServeFlags, env: NodeJS.ProcessEnv): ServeOptions {
  const dirFlag = nonEmptyFlag(flags.storeDir, '--store-dir');
  const dir = dirFlag ?? envValue(env, 'MBX_RELAY_DIR') ?? join(env.HOME ?? homedir(), DEFAULT_STORE_SUBDIR);
  const portFlag = nonEmptyFlag(flags.port, '--port');
  const envPort = envValue(env, 'PORT');
  const port = portFlag !== undefined ? parsePort(portFlag.trim(), '--port')
    : envPort !== undefined ? parsePort(envPort, 'PORT')
    : DEFAULT_PORT;
  const bind = nonEmptyFlag(flags.bind, '--bind')?.trim() ?? DEFAULT_BIND;
  const configFlag = nonEmptyFlag(flags.config, '--config');
  const configPath = configFlag === undefined ? null : resolve(expandHome(configFlag, env));
  const file = configPath === null ? undefined : parseConfigFile(readConfigText(configPath), configPath);
  const metricsBind = nonEmptyFlag(flags.metricsBind, '--metrics-bind');
  const store = nonEmptyFlag(flags.store, '--store') ?? envValue(env, 'MBX_RELAY_STORE');
  const workersFlag = nonEmptyFlag(flags.workers, '--workers');
  const envWorkers = envValue(env, 'MBX_RELAY_WORKERS');
  const workers = workersFlag !== undefined ? parseWorkers(workersFlag.trim(), '--workers')
    : envWorkers !== undefined ? parseWorkers(envWorkers, 'MBX_RELAY_WORKERS')
    : Math.min(availableParallelism(), MAX_WORKERS);
  return {
    workers,
    ...(metricsBind === undefined ? {} : { metricsBind: parseMetricsBind(metricsBind) }),
    ...(store === undefined ? {} : { store: store.trim() }),
    storeDir: resolve(expandHome(dir, env)),
    port,
    bind,
    configPath,
    config: resolveRelayConfig({ file, trustProxyFlag: flags.trustProxy, env }),
  };
}
