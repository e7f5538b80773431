// The settings table (src/relay/settings.ts) is the one declaration of every setting: these tests pin
// what operators already use (config keys, flags, variables, defaults) and check the operator docs
// describe every setting, so that a new entry cannot ship undocumented.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { Command } from 'commander';
import { addServeFlags } from '../../src/cli/relay-serve-flags.ts';
import { ConfigError, parseConfigFile } from '../../src/relay/config.ts';
import { OWNER_QUOTA_ALIASES, SETTING_ENTRIES, flagName } from '../../src/relay/settings.ts';

const OPERATOR_DOCS = readFileSync(new URL('../../docs/relay-operator.md', import.meta.url), 'utf8');

/** Every config-file key as it was before the table, written out by hand. */
const CONFIG_KEYS = [
  'max_item_bytes',
  'max_batch',
  'max_pull',
  'max_pull_bytes',
  'max_wait_s',
  'max_targets',
  'retention_days',
  'max_queue_items',
  'max_queue_bytes',
  'max_sender_items',
  'max_sender_bytes',
  'max_owner_items',
  'max_owner_bytes',
  'pushes_per_minute',
  'enrol_per_minute',
  'max_body_bytes',
  'sweep_interval_ms',
  'trust_proxy',
  'group_commit_max_items',
  'group_commit_max_wait_ms',
  'hop_verify_threads',
  'enrolment_authority',
  'token_issuer',
  'token_jwks_url',
  'token_audience',
  'max_account_items',
  'max_account_bytes',
];

test('the config file takes exactly the keys it took before', () => {
  let message = '';
  try {
    parseConfigFile('{"no_such_key": 1}', 'relay.json');
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    message = err.message;
  }
  const known = /known keys: (.*)$/.exec(message)?.[1]?.split(', ');
  assert.deepEqual(known, CONFIG_KEYS);
});

test('relay serve has exactly the flags it had (plus --store and --workers of issue 17), and the variable behind each setting flag', () => {
  const serve = addServeFlags(new Command('serve'));
  assert.deepEqual(
    serve.options.map((o) => o.flags),
    [
      '--store-dir <dir>',
      '--store <url>',
      '--port <n>',
      '--bind <addr>',
      '--config <file>',
      '--trust-proxy <mode>',
      '--metrics-bind <host:port>',
      '--workers <n>',
    ],
  );
  const withVariables = SETTING_ENTRIES.filter(([, s]) => s.env !== undefined || s.flag !== undefined).map(([key, s]) => [key, s.env, s.flag]);
  assert.deepEqual(withVariables, [['trust_proxy', 'MBX_RELAY_TRUST_PROXY', '--trust-proxy <mode>']]);
  const trust = serve.options.find((o) => o.long === '--trust-proxy');
  assert.equal(trust?.description, 'client address from a proxy: xff or cloudflare (env MBX_RELAY_TRUST_PROXY)');
});

test('docs/relay-operator.md has a row for every setting, with its default', () => {
  for (const [key, setting] of SETTING_ENTRIES) {
    const row = OPERATOR_DOCS.split('\n').find((line) => line.startsWith(`| \`${key}\` |`));
    assert.ok(row !== undefined, `docs/relay-operator.md has no table row for ${key}`);
    // the cell starts with the value (`none`, "host-key", 524288 (512 KiB), —)
    const documented = (row.split('|')[2] ?? '').trim().split(' ')[0]?.replace(/[`"]/g, '');
    assert.equal(documented, setting.default === undefined ? '—' : String(setting.default), `the default of ${key} in docs/relay-operator.md`);
    if (setting.flag !== undefined) assert.ok(OPERATOR_DOCS.includes(`| \`${flagName(setting.flag)} `), `the flags table has no row for ${setting.flag}`);
    if (setting.env !== undefined) assert.ok(OPERATOR_DOCS.includes(`\`${setting.env}\``), `docs/relay-operator.md does not name ${setting.env}`);
  }
  for (const alias of Object.keys(OWNER_QUOTA_ALIASES)) assert.ok(OPERATOR_DOCS.includes(`\`${alias}\``), `docs/relay-operator.md does not name ${alias}`);
});
