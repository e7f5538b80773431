// doctor on the relay: truthful states against a real relay (ok under the current host key, G13;
// key-mismatch; enrol-failed), relay rows per state with the oldest waiting one, the quarantine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDoctor, type DoctorReport } from '../../../src/host/doctor.ts';
import { rotateHost } from '../../../src/host/core/rotation.ts';
import { sendMail } from '../../../src/host/send.ts';
import { relayWorld, restartRelay, tick, tickUntilRow, type RelayWorld } from './relay-fixtures.ts';
import { tempDir } from '../../helpers/processes.ts';

function check(report: DoctorReport, name: string) {
  return report.checks.find((c) => c.check === name) ?? assert.fail(`no ${name} check: ${JSON.stringify(report.checks)}`);
}

async function doctorOf(world: RelayWorld, host: 'a' | 'b'): Promise<DoctorReport> {
  return runDoctor(world[host].node.home, () => world.clock.now);
}

test('doctor: ok and enrolled under the current key, the waiting rows and the oldest one', async () => {
  const world = await relayWorld();
  await tick(world.b);
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'waiting', body: 'x' });
  await tickUntilRow(world, world.a, id, 'relay-accepted');
  const report = await doctorOf(world, 'a');
  const relay = check(report, 'relay');
  assert.equal(relay.level, 'ok', relay.detail);
  assert.match(relay.detail, /^ok: .*enrolled as /);
  const rows = check(report, 'relay rows');
  assert.match(rows.detail, /1 relay-accepted/);
  assert.match(rows.detail, new RegExp(`oldest waiting: envelope ${id} -> beta`));
  assert.equal(check(report, 'relay quarantine').detail, 'empty');
});

test('doctor checks enrolment against the current host key (G13) and names a key mismatch', async () => {
  const world = await relayWorld();
  await tick(world.a);
  rotateHost(world.a.node); // the daemon has not told the relay yet
  const stale = check(await doctorOf(world, 'a'), 'relay');
  assert.equal(stale.level, 'fail');
  assert.match(stale.detail, /^enrol-failed: not enrolled under this host's key/);
  await tick(world.a);
  assert.equal(check(await doctorOf(world, 'a'), 'relay').level, 'ok');
  await restartRelay(world, tempDir('mbx-other-relay-'));
  const mismatch = check(await doctorOf(world, 'a'), 'relay');
  assert.equal(mismatch.level, 'fail', mismatch.detail);
  assert.match(mismatch.detail, /^key-mismatch: /);
  await tick(world.a);
  assert.match(check(await doctorOf(world, 'a'), 'relay').detail, /^key-mismatch: .*relay set .* --key /);
});
