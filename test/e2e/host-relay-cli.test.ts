// `agentmbx relay set|unset|quarantine` and `status` through the real CLI against a relay on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/processes.ts';
import { startTestRelay } from '../helpers/relay-fixture.ts';
import { TestClock } from '../helpers/clock.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost } from './host-helpers.ts';

test('relay set pins by first use or exactly --key; bad input exits 2, a wrong key 1', { timeout: E2E_TIMEOUT_MS }, async () => {
  const relay = await startTestRelay({ clock: new TestClock(Date.now()) });
  const host = await newCliHost('alpha', ['ann']);
  const fp = relay.service.fingerprint;
  const bad = await runCli(['relay', 'set', relay.url, '--key', 'not-a-fingerprint'], host.env);
  assert.equal(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, /^agentmbx: bad fingerprint/);
  const wrong = await runCli(['relay', 'set', relay.url, '--key', '0000-0000-0000-0000'], host.env);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, new RegExp(`presents key ${fp}, not 0000-0000-0000-0000`));
  assert.equal((await cliJson<{ relay: unknown }>(host, ['status'])).relay, null, 'nothing pinned by a refused set');
  assert.match(await cli(host, ['relay', 'set', relay.url]), new RegExp(`key ${fp} \\(pinned as first seen`));
  const pinned = await cliJson<{ fingerprint: string; tofu: boolean }>(host, ['relay', 'set', relay.url, '--key', fp.replaceAll('-', '').toUpperCase()]);
  assert.deepEqual([pinned.fingerprint, pinned.tofu], [fp, false]);
  const status = await cliJson<{ relay: { url: string; fingerprint: string; state: string } }>(host, ['status']);
  assert.deepEqual([status.relay.url, status.relay.fingerprint, status.relay.state], [relay.url, fp, 'new']);
  assert.deepEqual(JSON.parse(await cli(host, ['relay', 'quarantine', '--json'])), []);
  assert.equal(await cli(host, ['relay', 'quarantine']), 'no quarantined relay items\n');
  assert.equal(await cli(host, ['relay', 'unset']), 'relay unset\n');
  assert.equal((await cliJson<{ relay: unknown }>(host, ['status'])).relay, null);
  const down = await runCli(['relay', 'set', 'http://127.0.0.1:9'], host.env);
  assert.equal(down.code, 5, 'unreachable');
  assert.match(down.stderr, /^agentmbx: cannot reach the relay at http:\/\/127\.0\.0\.1:9/);
  assert.doesNotMatch(down.stderr, /\n\s+at /, 'no stack trace');
});
