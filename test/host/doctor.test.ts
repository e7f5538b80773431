// doctor: keys and modes, store, daemon, each peer over a signed call, outbox by age.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, rmSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { runDoctor, DOCTOR_STUCK_AFTER_MS } from '../../src/host/doctor.ts';
import { homePaths, initHome } from '../../src/host/core/identity.ts';
import { sendMail } from '../../src/host/send.ts';
import { runCli, tempDir } from '../helpers/processes.ts';
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

test("a host.db that is missing, empty or another host's fails doctor's store check, naming the cause and agentmbx restore FILE; nothing is made in its place", async () => {
  const newHome = (host: string): string => {
    const home = join(tempDir(`mbx-${host}-`), 'home');
    initHome(home, host, 0);
    return home;
  };
  const home = newHome('alpha');
  const store = homePaths(home).store;
  const storeFail = async (cause: RegExp): Promise<void> => {
    const size = existsSync(store) ? statSync(store).size : null;
    const report = await runDoctor(home);
    assert.deepEqual([report.ok, report.failures, report.host, levels(report)], [false, 1, null, { disk: 'ok', keys: 'ok', store: 'fail' }]);
    const detail = report.checks.find((c) => c.check === 'store')?.detail ?? '';
    assert.match(detail, cause);
    assert.match(detail, /restore it from a backup with agentmbx restore FILE/);
    assert.equal(existsSync(store) ? statSync(store).size : null, size, 'the store file is left as found');
  };
  truncateSync(store, 0);
  await storeFail(/host\.db is empty: /);
  rmSync(store);
  await storeFail(/host\.db is missing: /);
  copyFileSync(homePaths(newHome('beta')).store, store);
  await storeFail(/host\.db is another host's store \(host key [0-9a-f-]+, this home's is [0-9a-f-]+\): put this host's own host\.db back, or /);
});
