import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import {
  CHALLENGE_LIFE_MS,
  ConfigError,
  CROWDED_NAME_HOSTS,
  DEDUP_HORIZON_EXTRA_DAYS,
  DEFAULT_CONFIG,
  DEFAULT_LIMITS,
  ENROL_BODY_MAX_BYTES,
  HEARTBEAT_INTERVAL_MS,
  MAX_LIVE_ENROLMENTS,
  MAX_OPEN_CHALLENGES,
  MAX_RATE_ADDRESSES,
  SENDER_LIST_MAX_FUTURE_MS,
  dedupHorizonMs,
  parseConfigFile,
  resolveRelayConfig,
  retentionMs,
  type RelayConfigFile,
} from '../../src/relay/config.ts';
import { resolveServeOptions } from '../../src/cli/relay-serve-flags.ts';
import { MAX_WORKERS } from '../../src/relay/fixed-limits.ts';
import { tempDir } from '../helpers/processes.ts';

const MiB = 1_048_576;

/** protocol.md §6, written out by hand so that a change of a default fails here. */
const SECTION_6 = {
  limits: {
    max_item_bytes: 524_288,
    max_batch: 200,
    max_pull: 500,
    max_pull_bytes: 8 * MiB,
    max_wait_s: 55,
    max_targets: 64,
    retention_days: 14,
    max_queue_items: 10_000,
    max_queue_bytes: 50 * MiB,
    max_sender_items: 2_000,
    max_sender_bytes: 20 * MiB,
    max_owner_items: 10_000,
    max_owner_bytes: 50 * MiB,
  },
  pushes_per_minute: 120,
  enrol_per_minute: 30,
  max_body_bytes: 8 * MiB,
  sweep_interval_ms: 600_000,
  trust_proxy: 'none',
  group_commit_max_items: 256,
  group_commit_max_wait_ms: 20,
  hop_verify_threads: 1,
};

/** Runs `fn`, expects a ConfigError, returns its message. */
function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.ok(!err.message.includes('\n'), 'one line, no stack');
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

const parse = (json: string): RelayConfigFile => parseConfigFile(json, 'relay.json');
const fromFile = (json: string) => resolveRelayConfig({ file: parse(json), env: {} });

describe('defaults', () => {
  test('are exactly protocol.md §6', () => {
    assert.deepEqual(DEFAULT_CONFIG, SECTION_6);
    assert.deepEqual(DEFAULT_LIMITS, SECTION_6.limits);
  });

  test('an empty config file reports exactly §6', () => {
    assert.deepEqual(fromFile('{}'), SECTION_6);
    assert.deepEqual(resolveRelayConfig({ env: {} }), SECTION_6);
  });

  test('the fixed caps are §6 values', () => {
    assert.deepEqual(
      [
        ENROL_BODY_MAX_BYTES,
        MAX_LIVE_ENROLMENTS,
        MAX_OPEN_CHALLENGES,
        CHALLENGE_LIFE_MS,
        MAX_RATE_ADDRESSES,
        CROWDED_NAME_HOSTS,
        SENDER_LIST_MAX_FUTURE_MS,
        DEDUP_HORIZON_EXTRA_DAYS,
        HEARTBEAT_INTERVAL_MS,
      ],
      [8192, 100_000, 10_000, 300_000, 50_000, 16, 300_000, 7, 30_000],
    );
  });

  test('the defaults cannot be changed by a caller', () => {
    const config = resolveRelayConfig({ env: {} });
    config.limits.max_batch = 1;
    assert.equal(DEFAULT_LIMITS.max_batch, 200);
    assert.throws(() => {
      (DEFAULT_LIMITS as { max_batch: number }).max_batch = 1;
    }, TypeError);
  });

  test('retention and dedup horizon', () => {
    assert.equal(retentionMs(DEFAULT_CONFIG), 14 * 86_400_000);
    assert.equal(dedupHorizonMs(DEFAULT_CONFIG), 21 * 86_400_000);
    const half = fromFile('{"retention_days": 0.5}');
    assert.equal(retentionMs(half), 43_200_000);
    assert.equal(dedupHorizonMs(half), 43_200_000 + 7 * 86_400_000);
  });
});

describe('config file', () => {
  test('every key overrides its default', () => {
    const overrides = {
      max_item_bytes: 1000,
      max_batch: 2,
      max_pull: 3,
      max_pull_bytes: 4000,
      max_wait_s: 4,
      max_targets: 5,
      retention_days: 1.25,
      max_queue_items: 6,
      max_queue_bytes: 7000,
      max_sender_items: 8,
      max_sender_bytes: 9000,
      max_owner_items: 10,
      max_owner_bytes: 11_000,
      pushes_per_minute: 12,
      enrol_per_minute: 13,
      max_body_bytes: 14_000,
      sweep_interval_ms: 15_000,
      trust_proxy: 'cloudflare',
      group_commit_max_items: 16,
      group_commit_max_wait_ms: 17,
      hop_verify_threads: 3,
    };
    const config = fromFile(JSON.stringify(overrides));
    const {
      pushes_per_minute,
      enrol_per_minute,
      max_body_bytes,
      sweep_interval_ms,
      trust_proxy,
      group_commit_max_items,
      group_commit_max_wait_ms,
      hop_verify_threads,
      ...limits
    } = overrides;
    assert.deepEqual(config, {
      limits,
      pushes_per_minute,
      enrol_per_minute,
      max_body_bytes,
      sweep_interval_ms,
      trust_proxy,
      group_commit_max_items,
      group_commit_max_wait_ms,
      hop_verify_threads,
    });
  });

  test('one key overrides only itself', () => {
    assert.deepEqual(fromFile('{"max_pull": 7}'), { ...SECTION_6, limits: { ...SECTION_6.limits, max_pull: 7 } });
  });

  test('an unknown key is named', () => {
    assert.match(
      configError(() => parse('{"max_itme_bytes": 5}')),
      /relay\.json: unknown key "max_itme_bytes"/,
    );
    assert.match(
      configError(() => parse('{"limits": {}}')),
      /unknown key "limits"/,
    );
    assert.match(
      configError(() => parse('{"__proto__": {"max_batch": 1}}')),
      /unknown key "__proto__"/,
    );
    assert.match(
      configError(() => parse('{"toString": 1}')),
      /unknown key "toString"/,
    );
  });

  test('the per-account quotas: max_owner_* are the names, max_account_* their accepted aliases', () => {
    const owner = (json: string) => {
      const { max_owner_items, max_owner_bytes } = fromFile(json).limits;
      return [max_owner_items, max_owner_bytes];
    };
    assert.deepEqual(owner('{"max_owner_items": 3, "max_owner_bytes": 4000}'), [3, 4000]);
    assert.deepEqual(owner('{"max_account_items": 5, "max_account_bytes": 6000}'), [5, 6000]);
    assert.deepEqual(owner('{"max_owner_items": 7, "max_account_items": 7}'), [7, 50 * MiB], 'both names with one value');
    assert.ok(!('max_account_items' in fromFile('{"max_account_items": 5}').limits), 'the alias is folded, not kept');
    assert.equal(
      configError(() => parse('{"max_owner_items": 7, "max_account_items": 8}')),
      'relay config relay.json: max_owner_items (7) and its older name max_account_items (8) differ; give one of them',
    );
    assert.match(
      configError(() => resolveRelayConfig({ file: { max_account_bytes: 1, max_owner_bytes: 2 }, env: {} })),
      /^relay config: max_owner_bytes \(2\) and its older name max_account_bytes \(1\) differ/,
    );
  });

  test('a bad value is named, for every integer key', () => {
    // max_wait_s takes 0 (never hold a pull): its bounds are checked below
    const integerKeys = Object.keys(SECTION_6.limits)
      .filter((k) => k !== 'retention_days' && k !== 'max_wait_s')
      .concat([
        'max_account_items',
        'max_account_bytes',
        'pushes_per_minute',
        'enrol_per_minute',
        'max_body_bytes',
        'sweep_interval_ms',
        'group_commit_max_items',
        'group_commit_max_wait_ms',
      ]);
    for (const key of integerKeys) {
      for (const bad of ['"100000"', '-1', '0', '1.5', 'null', 'true', '[]', '{}', '1e300', '9007199254740993']) {
        const message = configError(() => parse(`{"${key}": ${bad}}`));
        assert.ok(message.startsWith(`relay config relay.json: ${key} must be an integer`), `${key}=${bad}: ${message}`);
      }
    }
  });

  test('integer keys take their lower and upper bounds', () => {
    assert.equal(fromFile('{"max_batch": 1, "max_pull_bytes": 1}').limits.max_batch, 1);
    assert.equal(fromFile('{"max_wait_s": 0}').limits.max_wait_s, 0);
    assert.equal(fromFile('{"max_wait_s": 300}').limits.max_wait_s, 300);
    for (const bad of ['301', '-1', '1.5', '"55"'])
      assert.match(
        configError(() => parse(`{"max_wait_s": ${bad}}`)),
        /max_wait_s must be an integer/,
      );
    assert.equal(fromFile('{"max_body_bytes": 8192}').max_body_bytes, 8192);
    assert.match(
      configError(() => parse('{"max_body_bytes": 8191}')),
      /max_body_bytes must be an integer of at least 8192 \(got 8191\)/,
    );
    assert.equal(fromFile('{"sweep_interval_ms": 100}').sweep_interval_ms, 100);
    assert.match(
      configError(() => parse('{"sweep_interval_ms": 99}')),
      /sweep_interval_ms must be an integer from 100 to 2147483647/,
    );
    assert.equal(fromFile('{"sweep_interval_ms": 2147483647}').sweep_interval_ms, 2_147_483_647);
    assert.match(
      configError(() => parse('{"sweep_interval_ms": 2147483648}')),
      /sweep_interval_ms/,
    );
    assert.equal(fromFile('{"group_commit_max_items": 1}').group_commit_max_items, 1);
    assert.equal(fromFile('{"group_commit_max_items": 10000}').group_commit_max_items, 10_000);
    assert.match(
      configError(() => parse('{"group_commit_max_items": 10001}')),
      /group_commit_max_items must be an integer from 1 to 10000 \(got 10001\)/,
    );
    assert.equal(fromFile('{"group_commit_max_wait_ms": 1000}').group_commit_max_wait_ms, 1_000);
    assert.match(
      configError(() => parse('{"group_commit_max_wait_ms": 1001}')),
      /group_commit_max_wait_ms must be an integer from 1 to 1000/,
    );
    assert.equal(fromFile('{"hop_verify_threads": 0}').hop_verify_threads, 0);
    assert.equal(fromFile('{"hop_verify_threads": 16}').hop_verify_threads, 16);
    assert.match(
      configError(() => parse('{"hop_verify_threads": 17}')),
      /hop_verify_threads must be an integer from 0 to 16 \(got 17\)/,
    );
    assert.match(
      configError(() => parse('{"hop_verify_threads": -1}')),
      /hop_verify_threads must be an integer from 0 to 16/,
    );
    assert.equal(fromFile('{"max_queue_bytes": 9007199254740991}').limits.max_queue_bytes, Number.MAX_SAFE_INTEGER);
  });

  test('retention_days takes fractions but not zero, negative, huge or non-numbers', () => {
    assert.equal(fromFile('{"retention_days": 0.001}').limits.retention_days, 0.001);
    assert.equal(fromFile('{"retention_days": 36500}').limits.retention_days, 36_500);
    for (const bad of ['0', '-1', '36501', '"14"', 'null', '1e-300', '1e400']) {
      assert.match(
        configError(() => parse(`{"retention_days": ${bad}}`)),
        /relay\.json: retention_days must be a positive number of days/,
        bad,
      );
    }
  });

  test('values that JSON cannot hold are refused when settings come from code', () => {
    for (const bad of [NaN, Infinity, -Infinity]) {
      assert.match(
        configError(() => resolveRelayConfig({ file: { retention_days: bad }, env: {} })),
        /retention_days must be/,
      );
      assert.match(
        configError(() => resolveRelayConfig({ file: { max_batch: bad }, env: {} })),
        /max_batch must be/,
      );
    }
    assert.match(
      configError(() => resolveRelayConfig({ file: { max_batch: 0 }, env: {} })),
      /^relay config: max_batch/,
    );
  });

  test('trust_proxy takes xff, cloudflare or none', () => {
    assert.equal(fromFile('{"trust_proxy": "xff"}').trust_proxy, 'xff');
    assert.equal(fromFile('{"trust_proxy": "none"}').trust_proxy, 'none');
    assert.equal(fromFile('{"trust_proxy": "Cloudflare"}').trust_proxy, 'cloudflare');
    assert.match(
      configError(() => parse('{"trust_proxy": "true"}')),
      /relay\.json: trust_proxy must be "xff", "cloudflare" or "none"/,
    );
    assert.match(
      configError(() => parse('{"trust_proxy": true}')),
      /trust_proxy must be .*got true/,
    );
  });

  test('the file must hold a JSON object', () => {
    for (const text of ['[]', 'null', '5', '"x"']) {
      assert.match(
        configError(() => parse(text)),
        /relay config relay\.json: must be a JSON object/,
      );
    }
  });

  test('broken JSON names the file and the position, without a stack or the text', () => {
    const message = configError(() => parse('{\n"max_batch": 5,\n}'));
    assert.match(message, /^relay config relay\.json is not valid JSON: .*line 3 column 1/);
    for (const text of ['{"max_batch": secret}', '{"max_batch": 5, "trust_proxy": secret-words-in-a-long-line}']) {
      const quoted = configError(() => parse(text));
      assert.match(quoted, /^relay config relay\.json is not valid JSON: Unexpected token 's'$/);
      assert.ok(!quoted.includes('secret'), quoted);
    }
    assert.match(
      configError(() => parse('')),
      /is not valid JSON: Unexpected end of JSON input$/,
    );
  });

  test('a UTF-8 byte order mark is tolerated', () => {
    assert.equal(fromFile('\uFEFF{"max_batch": 9}').limits.max_batch, 9);
  });
});

describe('trust proxy precedence', () => {
  const file = parse('{"trust_proxy": "cloudflare"}');
  test('flag > MBX_RELAY_TRUST_PROXY > file > default', () => {
    assert.equal(resolveRelayConfig({ env: {} }).trust_proxy, 'none');
    assert.equal(resolveRelayConfig({ file, env: {} }).trust_proxy, 'cloudflare');
    assert.equal(resolveRelayConfig({ file, env: { MBX_RELAY_TRUST_PROXY: 'xff' } }).trust_proxy, 'xff');
    assert.equal(resolveRelayConfig({ file, env: { MBX_RELAY_TRUST_PROXY: 'xff' }, flags: { trustProxy: 'none' } }).trust_proxy, 'none');
    assert.equal(resolveRelayConfig({ env: { MBX_RELAY_TRUST_PROXY: 'cloudflare' }, flags: { trustProxy: 'xff' } }).trust_proxy, 'xff');
  });

  test('an empty variable counts as unset', () => {
    assert.equal(resolveRelayConfig({ file, env: { MBX_RELAY_TRUST_PROXY: ' ' } }).trust_proxy, 'cloudflare');
  });

  test('a bad flag or variable is named', () => {
    assert.equal(
      configError(() => resolveRelayConfig({ env: {}, flags: { trustProxy: 'yes' } })),
      '--trust-proxy must be "xff", "cloudflare" or "none"',
    );
    assert.equal(
      configError(() => resolveRelayConfig({ env: { MBX_RELAY_TRUST_PROXY: '1' } })),
      'MBX_RELAY_TRUST_PROXY must be "xff", "cloudflare" or "none"',
    );
    // the flag wins, so the variable is never read
    assert.equal(resolveRelayConfig({ env: { MBX_RELAY_TRUST_PROXY: '1' }, flags: { trustProxy: 'xff' } }).trust_proxy, 'xff');
  });

  test('any letter case, blanks around it ignored', () => {
    assert.equal(resolveRelayConfig({ env: {}, flags: { trustProxy: ' XFF ' } }).trust_proxy, 'xff');
    assert.equal(resolveRelayConfig({ env: { MBX_RELAY_TRUST_PROXY: 'CloudFlare' } }).trust_proxy, 'cloudflare');
  });
});

describe('serve options', () => {
  const home = '/home/operator';

  test('defaults', () => {
    assert.deepEqual(resolveServeOptions({}, { HOME: home }), {
      storeDir: '/home/operator/.local/share/agentmbx-relay',
      port: 7374,
      bind: '127.0.0.1',
      configPath: null,
      config: SECTION_6,
      workers: Math.min(availableParallelism(), MAX_WORKERS),
    });
  });

  test("workers: flag > MBX_RELAY_WORKERS > the machine's available parallelism; 1 to MAX_WORKERS", () => {
    assert.equal(resolveServeOptions({ workers: '3' }, { HOME: home, MBX_RELAY_WORKERS: '5' }).workers, 3);
    assert.equal(resolveServeOptions({}, { HOME: home, MBX_RELAY_WORKERS: '5' }).workers, 5);
    assert.equal(resolveServeOptions({ workers: '1' }, { HOME: home }).workers, 1);
    assert.equal(resolveServeOptions({ workers: String(MAX_WORKERS) }, { HOME: home }).workers, MAX_WORKERS);
    for (const bad of ['0', '-1', '1.5', 'two', String(MAX_WORKERS + 1), '1e2']) {
      assert.equal(
        configError(() => resolveServeOptions({ workers: bad }, { HOME: home })),
        `--workers must be an integer from 1 to ${MAX_WORKERS}`,
      );
    }
    assert.equal(
      configError(() => resolveServeOptions({}, { HOME: home, MBX_RELAY_WORKERS: 'many' })),
      `MBX_RELAY_WORKERS must be an integer from 1 to ${MAX_WORKERS}`,
    );
  });

  test('store dir: flag > MBX_RELAY_DIR > default; resolved to an absolute path, ~ expanded', () => {
    assert.equal(resolveServeOptions({ storeDir: '/a' }, { HOME: home, MBX_RELAY_DIR: '/b' }).storeDir, '/a');
    assert.equal(resolveServeOptions({}, { HOME: home, MBX_RELAY_DIR: '/b' }).storeDir, '/b');
    assert.equal(resolveServeOptions({}, { HOME: home, MBX_RELAY_DIR: '' }).storeDir, '/home/operator/.local/share/agentmbx-relay');
    assert.equal(resolveServeOptions({}, { HOME: home, MBX_RELAY_DIR: '~/relay' }).storeDir, '/home/operator/relay');
    assert.equal(resolveServeOptions({ storeDir: 'rel' }, { HOME: home }).storeDir, join(process.cwd(), 'rel'));
    assert.equal(
      configError(() => resolveServeOptions({ storeDir: '' }, {})),
      '--store-dir must not be empty',
    );
  });

  test('port: flag > PORT > 7374, each validated and named', () => {
    assert.equal(resolveServeOptions({ port: '8080' }, { HOME: home, PORT: '9090' }).port, 8080);
    assert.equal(resolveServeOptions({}, { HOME: home, PORT: '9090' }).port, 9090);
    assert.equal(resolveServeOptions({}, { HOME: home, PORT: '' }).port, 7374);
    assert.equal(resolveServeOptions({ port: '0' }, { HOME: home }).port, 0);
    assert.equal(resolveServeOptions({ port: '65535' }, { HOME: home }).port, 65_535);
    for (const bad of ['65536', '-1', '80a', '1.5', '1e3', '0x50', '123456']) {
      assert.equal(
        configError(() => resolveServeOptions({ port: bad }, { HOME: home })),
        '--port must be an integer from 0 to 65535',
        bad,
      );
      assert.equal(
        configError(() => resolveServeOptions({}, { HOME: home, PORT: bad })),
        'PORT must be an integer from 0 to 65535',
        bad,
      );
    }
    // the flag wins, so a bad PORT is never read
    assert.equal(resolveServeOptions({ port: '1' }, { HOME: home, PORT: 'x' }).port, 1);
  });

  test('bind', () => {
    assert.equal(resolveServeOptions({ bind: '0.0.0.0' }, { HOME: home }).bind, '0.0.0.0');
    assert.equal(
      configError(() => resolveServeOptions({ bind: ' ' }, { HOME: home })),
      '--bind must not be empty',
    );
  });

  test('--config is read, and trust proxy precedence holds across flag, env and file', () => {
    const dir = tempDir();
    const path = join(dir, 'relay.json');
    writeFileSync(path, '{"max_batch": 3, "trust_proxy": "cloudflare"}');
    const options = resolveServeOptions({ config: path }, { HOME: home });
    assert.equal(options.configPath, path);
    assert.equal(options.config.limits.max_batch, 3);
    assert.equal(options.config.trust_proxy, 'cloudflare');
    assert.equal(resolveServeOptions({ config: path }, { HOME: home, MBX_RELAY_TRUST_PROXY: 'xff' }).config.trust_proxy, 'xff');
    assert.equal(resolveServeOptions({ config: path, trustProxy: 'none' }, { HOME: home, MBX_RELAY_TRUST_PROXY: 'xff' }).config.trust_proxy, 'none');
  });

  test('an unreadable or bad config file stops with its path', () => {
    const dir = tempDir();
    assert.equal(
      configError(() => resolveServeOptions({ config: join(dir, 'missing.json') }, {})),
      `cannot read relay config ${join(dir, 'missing.json')}: no such file`,
    );
    mkdirSync(join(dir, 'sub'));
    assert.equal(
      configError(() => resolveServeOptions({ config: join(dir, 'sub') }, {})),
      `cannot read relay config ${join(dir, 'sub')}: it is a directory`,
    );
    writeFileSync(join(dir, 'bad.json'), '{"max_pull": -5}');
    assert.equal(
      configError(() => resolveServeOptions({ config: join(dir, 'bad.json') }, {})),
      `relay config ${join(dir, 'bad.json')}: max_pull must be an integer of at least 1 (got -5)`,
    );
  });
});

test('no message echoes a string value (a private key pasted into the wrong place stays out of errors)', () => {
  const seed = generateSigningKey().exportSeed();
  const hex = Buffer.from(seed, 'base64').toString('hex');
  const messages = [
    configError(() => parse(`{"max_batch": "${seed}"}`)),
    configError(() => parse(`{"retention_days": "${seed}"}`)),
    configError(() => parse(`{"trust_proxy": "${seed}"}`)),
    configError(() => parse(`{"max_batch": ["${seed}"]}`)),
    configError(() => parse(`{"max_batch": ${seed}}`)),
    configError(() => parse(`{"max_batch": "${hex}"}`)),
    configError(() => resolveRelayConfig({ env: { MBX_RELAY_TRUST_PROXY: seed } })),
    configError(() => resolveRelayConfig({ env: {}, flags: { trustProxy: seed } })),
    configError(() => resolveServeOptions({}, { HOME: '/h', PORT: seed })),
    configError(() => resolveServeOptions({ port: hex }, { HOME: '/h' })),
  ];
  for (const message of messages) {
    for (const secret of [seed, hex, seed.slice(0, 12), hex.slice(0, 12)]) assert.ok(!message.includes(secret), message);
  }
});
