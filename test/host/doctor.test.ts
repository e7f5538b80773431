// doctor: keys and modes, store, daemon, each peer over a signed call, outbox by age.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { runDoctor, DOCTOR_STUCK_AFTER_MS } from '../../src/host/doctor.ts';
import { homePaths } from '../../src/host/core/identity.ts';
import { sendMail } from '../../src/host/send.ts';
import { runCli } from '../helpers/processes.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

function levels(report: Awaited<ReturnType<typeof runDoctor>>): Record<string, string> {
  return Object.fromEntries(report.checks.map((c) => [c.check, c.level]));
}

test('a healthy host with a reachable peer is ok; the never-run daemon is only a warning', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const report = await runDoctor(a.home, () => clock.now);
  assert.equal(report.ok, true);
  assert.deepEqual(levels(report), { disk: 'ok', keys: 'ok', store: 'ok', daemon: 'warn', 'peer beta': 'ok', outbox: 'ok' });
});

test('an unreachable peer with waiting mail, and mail stuck for over an hour, need the owner', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  const peer = a.store.peers.get('beta') ?? assert.fail();
  a.store.peers.pin({ ...peer, addr: 'http://127.0.0.1:1' }, clock.now);
  const warnOnly = await runDoctor(a.home, () => clock.now);
  assert.equal(levels(warnOnly)['peer beta'], 'warn', 'unreachable with nothing waiting');
  sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const waiting = await runDoctor(a.home, () => clock.now);
  assert.equal(waiting.ok, false);
  assert.equal(levels(waiting)['peer beta'], 'fail');
  assert.equal(levels(waiting)['daemon'], 'fail');
  assert.equal(levels(waiting)['outbox envelope -> beta'], 'ok');
  clock.now += DOCTOR_STUCK_AFTER_MS + 1;
  assert.equal(levels(await runDoctor(a.home, () => clock.now))['outbox envelope -> beta'], 'fail');
});

test('open key files fail doctor, and the CLI exits 1', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  chmodSync(homePaths(a.home).encKey, 0o644);
  const report = await runDoctor(a.home, () => clock.now);
  assert.equal(report.ok, false);
  assert.match(report.checks.find((c) => c.check === 'keys')?.detail ?? '', /enc\.key is too open/);
  const r = await runCli(['doctor', '--json'], { MBX_HOME: a.home });
  assert.equal(r.code, 1);
  assert.equal((JSON.parse(r.stdout) as { ok: boolean }).ok, false);
});
