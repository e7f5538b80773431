// The relay's HTTP conformance tests against every configuration the relay runs in (issue 17): the
// files below run again, each setup in a child test run of its own test file
// (test/relay/conformance-workers.test.ts, conformance-postgres.test.ts), with AGENTMBX_TEST_RELAY_SETUP naming the relay
// that startTestRelay starts there (relay-fixture.ts): a group's leader and two workers on one
// SQLite store, and two relays on one PostgreSQL database, each behind one address. The single
// process is the default setup of the whole suite. Tests that depend on one process (the
// per-address enrolment rate) or on the SQLite store's own files (backup and restore) say so and
// skip in the other setups. The PostgreSQL files share one cluster, started here: nobody kills it, so
// it does not sync its commits (the drills in test/drills and test/relay/postgres prove durability on
// clusters that do).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TestRelaySetup } from './relay-fixture.ts';
import { startPostgresCluster, UNSYNCED_SETTINGS } from './postgres-cluster.ts';
import { SHARED_CLUSTER_ENV } from './postgres-test-cluster.ts';
import { spawnNode } from './processes.ts';

const CONFORMANCE_FILES = [
  'info',
  'hop',
  'enrolment',
  'push',
  'push-rejections',
  'pull-ack',
  'senders',
  'rotation',
  'v1-messages',
  'enc-ads',
  'refusal-codes',
  'hosted-relay',
  'bounded-state',
  'sweep',
].map((name) => `test/relay/${name}.test.ts`);

/** The conformance files run against `setup` (a machine without what it needs skips, saying `missing`). */
export function conformanceTest(setup: TestRelaySetup, label: string, missing: string | null): void {
  test(`the relay's HTTP conformance tests pass against ${label}`, { skip: missing ?? false, timeout: 15 * 60_000 }, async (t) => {
    // a run of its own, not a part of this one (the runner marks its children with NODE_TEST_CONTEXT)
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    if (setup === 'postgres-2') {
      const start = await startPostgresCluster({ settings: UNSYNCED_SETTINGS });
      assert.ok(start.available, start.available ? '' : start.reason);
      t.after(() => start.cluster.stop());
      env[SHARED_CLUSTER_ENV] = JSON.stringify(start.cluster.address);
    }
    const run = spawnNode(['--test', '--test-concurrency=1', '--test-reporter=spec', ...CONFORMANCE_FILES], {
      env: { ...env, AGENTMBX_TEST_RELAY_SETUP: setup },
    });
    const code = await run.exited;
    const failures = run
      .stdout()
      .split('\n')
      .filter((line) => line.includes('✖'))
      .slice(0, 40)
      .join('\n');
    assert.equal(code, 0, `${setup}: ${failures || run.stderr().slice(-3000)}`);
  });
}
