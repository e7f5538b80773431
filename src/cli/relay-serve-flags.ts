// The flags and environment of `agentmbx relay serve`: where the store is, where to listen, the
// config file, and every setting that has a flag of its own (SETTINGS in src/relay/settings.ts;
// such a flag is registered here without a line of its own).
import { readFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { portFromText } from '../common/port.ts';
import { ConfigError, envValue, parseConfigFile, resolveRelayConfig, type RelayConfig } from '../relay/config.ts';
import { MAX_WORKERS } from '../relay/fixed-limits.ts';
import { SETTING_ENTRIES } from '../relay/settings.ts';

/** Where the relay keeps its store and relay.key when neither --store-dir nor MBX_RELAY_DIR says. */
export const DEFAULT_STORE_SUBDIR = join('.local', 'share', 'agentmbx-relay');
export const DEFAULT_PORT = 7374;
export const DEFAULT_BIND = '127.0.0.1';
export const STORE_DIR_HELP = 'store directory (env MBX_RELAY_DIR; default ~/.local/share/agentmbx-relay)';
export const STORE_URL_HELP = 'a postgres:// URL: keep the store in that PostgreSQL database instead (env MBX_RELAY_STORE)';

/** Commander's values of the serve flags, by attribute name (`storeDir`, `trustProxy`…). */
export type ServeFlags = Readonly<Record<string, string | undefined>>;

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

/** Adds the serve flags to `command`: the store and listening flags, then one per setting that has a flag. */
export function addServeFlags(command: Command): Command {
  command
    .option('--store-dir <dir>', STORE_DIR_HELP)
    .option('--store <url>', STORE_URL_HELP)
    .option('--port <n>', `TCP port (env PORT; default ${DEFAULT_PORT})`)
    .option('--bind <addr>', `address to listen on (default ${DEFAULT_BIND})`)
    .option('--config <file>', 'JSON file overriding the default limits');
  for (const [, setting] of SETTING_ENTRIES) {
    if (setting.flag === undefined) continue;
    command.option(setting.flag, setting.env === undefined ? setting.doc : `${setting.doc} (env ${setting.env})`);
  }
  return command
    .option('--metrics-bind <host:port>', 'serve /metrics and /healthz on this separate address instead of the relay port')
    .option(
      '--workers <n>',
      `relay processes serving the port on one store (env MBX_RELAY_WORKERS; default: the machine's cores; 1: a single process; at most ${MAX_WORKERS})`,
    );
}

/** Expands a leading `~` (env files and `--flag=~/x` reach us unexpanded by a shell). */
function expandHome(path: string, env: NodeJS.ProcessEnv): string {
  if (path !== '~' && !path.startsWith('~/')) return path;
  return join(env.HOME ?? homedir(), path.slice(1));
}

function parsePort(text: string, source: string): number {
  const port = portFromText(text);
  if (port === null) throw new ConfigError(`${source} must be an integer from 0 to 65535`);
  return port;
}

/** `HOST:PORT` or `[IPv6]:PORT` of --metrics-bind. */
export function parseMetricsBind(text: string): { host: string; port: number } {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text.trim());
  if (match === null) throw new ConfigError('--metrics-bind must be HOST:PORT, for example 127.0.0.1:9464 or [::1]:9464');
  return { host: match[1] ?? match[2] ?? '', port: parsePort(match[3] ?? '', '--metrics-bind port') };
}

/** `--workers` or MBX_RELAY_WORKERS: an integer from 1 to MAX_WORKERS. */
function parseWorkers(text: string, source: string): number {
  const workers = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(workers >= 1 && workers <= MAX_WORKERS)) throw new ConfigError(`${source} must be an integer from 1 to ${MAX_WORKERS}`);
  return workers;
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
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable');
    throw new ConfigError(`cannot read relay config ${path}: ${reason}`);
  }
}

/**
 * Everything `agentmbx relay serve` needs to start, from its flags and environment:
 * store dir = --store-dir, MBX_RELAY_DIR, ~/.local/share/agentmbx-relay; store = --store, MBX_RELAY_STORE
 * (a postgres:// URL; default the SQLite store in the store dir); port = --port, PORT, 7374;
 * bind = --bind, 127.0.0.1; workers = --workers, MBX_RELAY_WORKERS, the machine's cores;
 * settings from --config (optional), their flags and variables.
 */
export function resolveServeOptions(flags: ServeFlags, env: NodeJS.ProcessEnv): ServeOptions {
  const dirFlag = nonEmptyFlag(flags['storeDir'], '--store-dir');
  const dir = dirFlag ?? envValue(env, 'MBX_RELAY_DIR') ?? join(env.HOME ?? homedir(), DEFAULT_STORE_SUBDIR);
  const portFlag = nonEmptyFlag(flags['port'], '--port');
  const envPort = envValue(env, 'PORT');
  const port = portFlag !== undefined ? parsePort(portFlag.trim(), '--port') : envPort !== undefined ? parsePort(envPort, 'PORT') : DEFAULT_PORT;
  const bind = nonEmptyFlag(flags['bind'], '--bind')?.trim() ?? DEFAULT_BIND;
  const configFlag = nonEmptyFlag(flags['config'], '--config');
  const configPath = configFlag === undefined ? null : resolve(expandHome(configFlag, env));
  const file = configPath === null ? undefined : parseConfigFile(readConfigText(configPath), configPath);
  const metricsBind = nonEmptyFlag(flags['metricsBind'], '--metrics-bind');
  const store = nonEmptyFlag(flags['store'], '--store') ?? envValue(env, 'MBX_RELAY_STORE');
  const workersFlag = nonEmptyFlag(flags['workers'], '--workers');
  const envWorkers = envValue(env, 'MBX_RELAY_WORKERS');
  const workers =
    workersFlag !== undefined
      ? parseWorkers(workersFlag.trim(), '--workers')
      : envWorkers !== undefined
        ? parseWorkers(envWorkers, 'MBX_RELAY_WORKERS')
        : Math.min(availableParallelism(), MAX_WORKERS);
  return {
    workers,
    ...(metricsBind === undefined ? {} : { metricsBind: parseMetricsBind(metricsBind) }),
    ...(store === undefined ? {} : { store: store.trim() }),
    storeDir: resolve(expandHome(dir, env)),
    port,
    bind,
    configPath,
    config: resolveRelayConfig({ ...(file === undefined ? {} : { file }), flags, env }),
  };
}
