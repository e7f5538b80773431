// Every configurable relay setting, declared once (protocol.md §6): its config-file key, what values
// it takes, its default, one line of help, and the environment variable and `relay serve` flag
// that may also set it. The types (RelayLimits, RelayConfig), the defaults, the config-file parser
// (config.ts) and the serve flags (src/cli/relay-serve-flags.ts) are all derived from SETTINGS.
//
// Adding a setting is one entry below: pick its section ('limits' are advertised in
// GET /v2/relay/info, 'relay' are the relay's own), its rule and its default (without one it is
// optional in RelayConfig); give it `env` and/or `flag` when an operator may set it without a config
// file, e.g. `workers: { section: 'relay', rule: { kind: 'integer', min: 1, max: 64 }, default: 1,
// doc: '…', env: 'MBX_RELAY_WORKERS', flag: '--workers <n>' }` (precedence: flag, variable, file,
// default). RelayConfig gains the typed field, `relay serve` the flag. Then describe it in
// docs/relay-operator.md: test/relay/settings.test.ts fails until the docs have a row for it.
import { MAX_HOP_VERIFY_THREADS } from './crypto/hop-verify-pool.ts';
import { DEFAULT_GROUP_COMMIT, MAX_GROUP_COMMIT_ITEMS, MAX_GROUP_COMMIT_WAIT_MS } from './store/group-commit-policy.ts';
import { ENROL_BODY_MAX_BYTES, MAX_TIMER_MS, MAX_WAIT_S_LIMIT, MIN_SWEEP_INTERVAL_MS } from './fixed-limits.ts';

/** What a setting accepts. A `choice` with `anyCase` also takes its values in any letter case, trimmed. */
export type Rule =
  | { readonly kind: 'integer'; readonly min: number; readonly max: number }
  | { readonly kind: 'days' }
  | { readonly kind: 'choice'; readonly values: readonly string[]; readonly anyCase?: boolean }
  | { readonly kind: 'text' };

/**
 * Where a setting lands: `limits` in RelayConfig.limits, `relay` at the top of RelayConfig,
 * `authority` in RelayConfig.account_token (the enrolment authority and its token settings, which
 * are checked together by config.ts).
 */
export type Section = 'limits' | 'relay' | 'authority';

export interface Setting {
  readonly section: Section;
  readonly rule: Rule;
  /** absent only for settings that are required together with another one (the token settings) */
  readonly default?: number | string;
  /** one line for `--help` and error hints; docs/relay-operator.md has the full text */
  readonly doc: string;
  readonly env?: string;
  /** the `relay serve` flag with its value's name, as `--name <value>` */
  readonly flag?: string;
}

const MiB = 1024 * 1024;
const positiveInteger = { kind: 'integer', min: 1, max: Number.MAX_SAFE_INTEGER } as const;
const text = { kind: 'text' } as const;

export const SETTINGS = {
  max_item_bytes: { section: 'limits', rule: positiveInteger, default: 524_288, doc: 'largest item for one target, raw wire bytes' },
  max_batch: { section: 'limits', rule: positiveInteger, default: 200, doc: 'items per push request' },
  max_pull: { section: 'limits', rule: positiveInteger, default: 500, doc: 'items per pull page' },
  max_pull_bytes: { section: 'limits', rule: positiveInteger, default: 8 * MiB, doc: 'bytes per pull page (at least one item)' },
  // 55 s: a held pull ends well inside a proxy's 100 s idle limit (Cloudflare's), with room for the answer
  max_wait_s: {
    section: 'limits',
    rule: { kind: 'integer', min: 0, max: MAX_WAIT_S_LIMIT },
    default: 55,
    doc: 'seconds a pull with nothing for it may be held open (0: never held)',
  },
  max_targets: { section: 'limits', rule: positiveInteger, default: 64, doc: 'targets per item' },
  retention_days: { section: 'limits', rule: { kind: 'days' }, default: 14, doc: 'days an unacked item lives, fractions allowed' },
  max_queue_items: { section: 'limits', rule: positiveInteger, default: 10_000, doc: 'items queued for one target key' },
  max_queue_bytes: { section: 'limits', rule: positiveInteger, default: 50 * MiB, doc: 'bytes queued for one target key' },
  max_sender_items: { section: 'limits', rule: positiveInteger, default: 2_000, doc: "one sender's share of one target's queue, items" },
  max_sender_bytes: { section: 'limits', rule: positiveInteger, default: 20 * MiB, doc: "one sender's share of one target's queue, bytes" },
  max_owner_items: { section: 'limits', rule: positiveInteger, default: 10_000, doc: 'items queued for all hosts of one proven account' },
  max_owner_bytes: { section: 'limits', rule: positiveInteger, default: 50 * MiB, doc: 'bytes queued for all hosts of one proven account' },
  pushes_per_minute: { section: 'relay', rule: positiveInteger, default: 120, doc: 'push requests per sender key per minute (protocol.md §7.3)' },
  enrol_per_minute: {
    section: 'relay',
    rule: positiveInteger,
    default: 30,
    doc: 'challenge + enrol + rotate calls per client address per minute (protocol.md §7.4)',
  },
  // below the fixed small-route cap would make a push body smaller than an enrol body
  max_body_bytes: {
    section: 'relay',
    rule: { kind: 'integer', min: ENROL_BODY_MAX_BYTES, max: Number.MAX_SAFE_INTEGER },
    default: 8 * MiB,
    doc: 'request body cap of every route except challenge, enrol and rotate',
  },
  sweep_interval_ms: {
    section: 'relay',
    rule: { kind: 'integer', min: MIN_SWEEP_INTERVAL_MS, max: MAX_TIMER_MS },
    default: 600_000,
    doc: 'period of the expiry sweep after the one at start',
  },
  trust_proxy: {
    section: 'relay',
    rule: { kind: 'choice', values: ['xff', 'cloudflare', 'none'], anyCase: true },
    default: 'none',
    doc: 'client address from a proxy: xff or cloudflare',
    env: 'MBX_RELAY_TRUST_PROXY',
    flag: '--trust-proxy <mode>',
  },
  group_commit_max_items: {
    section: 'relay',
    rule: { kind: 'integer', min: 1, max: MAX_GROUP_COMMIT_ITEMS },
    default: DEFAULT_GROUP_COMMIT.maxItems,
    doc: 'write transactions committed together at most (1 turns grouping off)',
  },
  group_commit_max_wait_ms: {
    section: 'relay',
    rule: { kind: 'integer', min: 1, max: MAX_GROUP_COMMIT_WAIT_MS },
    default: DEFAULT_GROUP_COMMIT.maxWaitMs,
    doc: 'how long a commit group may stay open gathering queued writes',
  },
  hop_verify_threads: {
    section: 'relay',
    rule: { kind: 'integer', min: 0, max: MAX_HOP_VERIFY_THREADS },
    default: 1,
    doc: 'worker threads checking hop signatures (0: on the event loop)',
  },
  enrolment_authority: {
    section: 'authority',
    rule: { kind: 'choice', values: ['host-key', 'account-token'] },
    default: 'host-key',
    doc: 'who may enrol: the host-key challenge or account tokens (design §8)',
  },
  token_issuer: { section: 'authority', rule: text, doc: "the accounts issuer, compared exactly with a token's iss" },
  token_jwks_url: { section: 'authority', rule: text, doc: "where the issuer's JWKS is fetched (https, or http on a loopback address)" },
  token_audience: { section: 'authority', rule: text, doc: "this relay's own public URL, compared exactly with a token's aud" },
} as const satisfies Record<string, Setting>;

type Settings = typeof SETTINGS;
export type SettingKey = keyof Settings;
type ValueOf<R extends Rule> = R extends { kind: 'choice'; values: readonly (infer V)[] } ? V : R extends { kind: 'text' } ? string : number;
type KeysIn<S extends Section> = { [K in SettingKey]: Settings[K]['section'] extends S ? K : never }[SettingKey];
type ValuesOf<K extends SettingKey> = { [P in K]: ValueOf<Settings[P]['rule']> };
/** The values of `section`: a setting with a default is always there, one without only when given. */
type SectionValues<S extends Section> = { [K in KeysIn<S> as Settings[K] extends { default: number | string } ? K : never]: ValueOf<Settings[K]['rule']> } & {
  [K in KeysIn<S> as Settings[K] extends { default: number | string } ? never : K]?: ValueOf<Settings[K]['rule']>;
};

/** The limits a relay advertises in `GET /v2/relay/info` (protocol.md §3.1). Sizes are raw wire bytes. */
export type RelayLimits = SectionValues<'limits'>;
export type TrustProxy = ValueOf<Settings['trust_proxy']['rule']>;
/** Who may enrol (design §8): the host-key challenge (default) or account tokens (the hosted relay). */
export type EnrolmentAuthorityName = ValueOf<Settings['enrolment_authority']['rule']>;
/** The account-token authority's settings (docs/hosted-relay.md); all required with that authority. */
export type AccountTokenSettings = ValuesOf<'token_issuer' | 'token_jwks_url' | 'token_audience'>;

export type RelayConfig = SectionValues<'relay'> & {
  limits: RelayLimits;
  /** present when `enrolment_authority` is "account-token"; absent: the host-key challenge */
  account_token?: AccountTokenSettings;
};

/** Older names of the per-account quotas, still accepted in a config file (and advertised beside the new ones). */
export const OWNER_QUOTA_ALIASES = Object.freeze({ max_account_items: 'max_owner_items', max_account_bytes: 'max_owner_bytes' } as const);
export type OwnerQuotaAlias = keyof typeof OWNER_QUOTA_ALIASES;

/** The flat keys a config file may hold, each optional. */
export type RelayConfigFile = Partial<ValuesOf<SettingKey> & Record<OwnerQuotaAlias, number>>;

/** SETTINGS as entries, typed for loops. */
export const SETTING_ENTRIES = Object.entries(SETTINGS) as Array<[SettingKey, Setting]>;

function defaultsOf(section: Section): Record<string, number | string> {
  return Object.fromEntries(SETTING_ENTRIES.flatMap(([key, s]) => (s.section === section && s.default !== undefined ? [[key, s.default]] : [])));
}

export const DEFAULT_LIMITS = Object.freeze(defaultsOf('limits')) as RelayLimits;
export const DEFAULT_CONFIG = Object.freeze({ ...defaultsOf('relay'), limits: DEFAULT_LIMITS }) as RelayConfig;

/** A flag's name without its value: `--trust-proxy <mode>` → `--trust-proxy`. */
export function flagName(flag: string): string {
  return flag.split(' ')[0] ?? flag;
}

/** The attribute commander gives a flag's value: `--trust-proxy <mode>` → `trustProxy`. */
export function flagAttribute(flag: string): string {
  return flagName(flag)
    .replace(/^--/, '')
    .replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
