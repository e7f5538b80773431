// The relay's effective settings: the defaults of SETTINGS (settings.ts), overridden by an optional
// JSON config file, and for settings that have one by an environment variable or a `relay serve`
// flag. Every value is checked at start-up; a bad one stops the relay with a message naming it.
// Messages never echo a string value (an operator may paste a secret into the wrong place), only numbers.
import { DEDUP_HORIZON_EXTRA_DAYS, MAX_RETENTION_DAYS, MAX_SETTING_CHARS } from './fixed-limits.ts';
import {
  OWNER_QUOTA_ALIASES,
  SETTING_ENTRIES,
  SETTINGS,
  flagAttribute,
  flagName,
  type AccountTokenSettings,
  type OwnerQuotaAlias,
  type RelayConfig,
  type RelayConfigFile,
  type RelayLimits,
  type Rule,
  type Setting,
  type SettingKey,
} from './settings.ts';

// The settings' types and defaults, and the fixed caps, are read through this module by the relay's
// core, so that it has one place to import its configuration from.
export {
  DEFAULT_CONFIG,
  DEFAULT_LIMITS,
  type AccountTokenSettings,
  type EnrolmentAuthorityName,
  type RelayConfig,
  type RelayConfigFile,
  type RelayLimits,
  type TrustProxy,
} from './settings.ts';
export * from './fixed-limits.ts';

const DAY_MS = 86_400_000;

/** A setting, flag or environment variable that stops start-up; the message names it. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** What a bad value was, without echoing text (it may be a secret pasted into the wrong place). */
function describeValue(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return 'a string';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : String(value);
}

/** `"a", "b" or "c"` */
function choiceList(values: readonly string[]): string {
  const quoted = values.map((v) => JSON.stringify(v));
  return quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}

/** What `rule` asks for, as the end of "NAME must be …". */
function ruleText(rule: Rule): string {
  switch (rule.kind) {
    case 'choice':
      return choiceList(rule.values);
    case 'text':
      return `a non-empty string of at most ${MAX_SETTING_CHARS} characters`;
    case 'days':
      return `a positive number of days up to ${MAX_RETENTION_DAYS}, fractions allowed`;
    case 'integer':
      return rule.max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${rule.min}` : `an integer from ${rule.min} to ${rule.max}`;
  }
}

/** `value` when `rule` takes it (a choice normalised), else undefined. */
function accepted(rule: Rule, value: unknown): number | string | undefined {
  switch (rule.kind) {
    case 'choice': {
      if (typeof value !== 'string') return undefined;
      const choice = rule.anyCase === true ? value.trim().toLowerCase() : value;
      return rule.values.includes(choice) ? choice : undefined;
    }
    case 'text':
      return typeof value === 'string' && value.trim() !== '' && value.length <= MAX_SETTING_CHARS ? value : undefined;
    case 'days':
      return typeof value === 'number' && Number.isFinite(value) && value > 0 && value <= MAX_RETENTION_DAYS && Math.round(value * DAY_MS) >= 1
        ? value
        : undefined;
    case 'integer':
      return typeof value === 'number' && Number.isSafeInteger(value) && value >= rule.min && value <= rule.max ? value : undefined;
  }
}

/** A config-file value of `name`, checked; the message says what was given (numbers only). */
function checkFileValue(name: string, rule: Rule, value: unknown): number | string {
  const ok = accepted(rule, value);
  if (ok === undefined) throw new ConfigError(`${name} must be ${ruleText(rule)} (got ${describeValue(value)})`);
  return ok;
}

/** A value given as text (a flag or a variable) named `name`; it is always a string, so the message does not say what it was. */
function checkTextValue(name: string, rule: Rule, text: string): number | string {
  const trimmed = text.trim();
  const value = rule.kind === 'integer' || rule.kind === 'days' ? (/^\d+(\.\d+)?$/.test(trimmed) ? Number(trimmed) : NaN) : text;
  const ok = accepted(rule, value);
  if (ok === undefined) throw new ConfigError(`${name} must be ${ruleText(rule)}`);
  return ok;
}

/** The rule of a config-file key (an older quota name has its current name's), or undefined for an unknown key. */
function ruleOf(key: string): Rule | undefined {
  const name = Object.hasOwn(OWNER_QUOTA_ALIASES, key) ? OWNER_QUOTA_ALIASES[key as OwnerQuotaAlias] : key;
  return Object.hasOwn(SETTINGS, name) ? (SETTINGS[name as SettingKey] as Setting).rule : undefined;
}

const KNOWN_KEYS = [...Object.keys(SETTINGS), ...Object.keys(OWNER_QUOTA_ALIASES)];

/** Checks an object of config keys (a parsed file, or settings built in code); `where` prefixes messages. */
function validateConfigObject(object: unknown, where: string): RelayConfigFile {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    throw new ConfigError(`${where}must be a JSON object of settings (got ${describeValue(object)})`);
  }
  const out: Record<string, number | string> = {};
  for (const [key, value] of Object.entries(object)) {
    const rule = ruleOf(key);
    if (rule === undefined) throw new ConfigError(`${where}unknown key ${JSON.stringify(key)}; known keys: ${KNOWN_KEYS.join(', ')}`);
    out[key] = checkFileValue(`${where}${key}`, rule, value);
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

/** An environment variable, with an empty or blank value counted as unset. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** `relay serve` flags by commander's attribute name (`trustProxy` for --trust-proxy). */
export type SettingFlags = Readonly<Record<string, string | undefined>>;

/** A setting's value from its flag, else its variable, else undefined. Only the winning source is read: a flag overrides even a malformed variable. */
function commandLineValue(setting: Setting, flags: SettingFlags, env: NodeJS.ProcessEnv): number | string | undefined {
  const flagText = setting.flag === undefined ? undefined : flags[flagAttribute(setting.flag)];
  if (flagText !== undefined && setting.flag !== undefined) return checkTextValue(flagName(setting.flag), setting.rule, flagText);
  const envText = setting.env === undefined ? undefined : envValue(env, setting.env);
  if (envText !== undefined && setting.env !== undefined) return checkTextValue(setting.env, setting.rule, envText);
  return undefined;
}

/**
 * The effective settings: for each one its flag, else its variable, else the file's key, else its
 * default (settings.ts).
 */
export function resolveRelayConfig(input: { file?: RelayConfigFile; flags?: SettingFlags; env: NodeJS.ProcessEnv }): RelayConfig {
  const file = validateConfigObject(input.file ?? {}, 'relay config: ');
  const limits: Record<string, unknown> = {};
  const relay: Record<string, unknown> = {};
  for (const [key, setting] of SETTING_ENTRIES) {
    if (setting.section === 'authority') continue;
    const value = commandLineValue(setting, input.flags ?? {}, input.env) ?? file[key] ?? setting.default;
    if (value !== undefined) (setting.section === 'limits' ? limits : relay)[key] = value;
  }
  return { ...relay, limits, ...accountTokenSettings(file) } as RelayConfig;
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
