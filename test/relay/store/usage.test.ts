import assert from 'node:assert/strict';
import type { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import type { Enrolment } from '../../../src/relay/store/relay-store.ts';
import { freshStore, inspect, item } from './store-fixtures.ts';

/** Deterministic pseudo-random numbers (an LCG), so a failing sequence replays exactly. */
function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

function rows(db: DatabaseSync, query: string): string[] {
  return db.prepare(query).all().map((row) => JSON.stringify(Object.values(row))).sort();
}

function assertCountersExact(dir: string): void {
  inspect(dir, (db) => {
    assert.deepEqual(
      rows(db, 'SELECT target_pubkey, items, bytes FROM queue_usage'),
      rows(db, 'SELECT target_pubkey, count(*), sum(bytes) FROM items GROUP BY target_pubkey'),
    );
    assert.deepEqual(
      rows(db, 'SELECT sender_pubkey, target_pubkey, items, bytes FROM sender_usage'),
      rows(db, 'SELECT sender_pubkey, target_pubkey, count(*), sum(bytes) FROM items GROUP BY sender_pubkey, target_pubkey'),
    );
    assert.deepEqual(
      rows(db, 'SELECT account, items, bytes FROM account_usage'),
      rows(db, 'SELECT account, count(*), sum(bytes) FROM items WHERE account IS NOT NULL GROUP BY account'),
    );
    assert.deepEqual(
      rows(db, `SELECT value FROM counters WHERE name = 'live_enrolments'`),
      rows(db, 'SELECT count(*) FROM enrolments WHERE revoked_at IS NULL'),
    );
  });
}

function enrolment(hostPubkey: string, fields: Partial<Enrolment> = {}): Enrolment {
  return { hostPubkey, hostName: `host-${hostPubkey}`, ownerFp: '', account: null, org: null, authorizedBy: 'host-key', enrolledAt: 1, revokedAt: null, ...fields };
}

test('usage counters equal the real aggregates after a long mixed sequence of operations', async () => {
  const { store, dir } = await freshStore();
  const random = seeded(7);
  const targets = ['T1', 'T2', 'T3', 'T4', 'T5'];
  const senders = ['S1', 'S2', 'S3'];
  const accounts = [null, 'acct-a', 'acct-b'];
  let rotations = 0;
  await store.transaction(async (tx) => {
    for (const target of targets) await tx.putEnrolment(enrolment(target, { account: 'acct-a' }));
  });
  for (let step = 0; step < 400; step += 1) {
    const target = targets[random(targets.length)] ?? 'T1';
    const choice = random(11);
    await store.transaction(async (tx) => {
      if (choice < 5) {
        await tx.insertItem(item({
          targetPubkey: target, itemId: `i${step}`, senderPubkey: senders[random(senders.length)] ?? 'S1',
          account: accounts[random(accounts.length)] ?? null,
        }, 1 + random(50)), step);
      } else if (choice < 7) {
        const page = await tx.pull(target, 0, 5, 1_000_000);
        const last = page.items[random(page.items.length + 1)];
        if (last !== undefined) await tx.ack(target, last.seq);
      } else if (choice < 9) {
        const page = await tx.pull(target, 0, 5, 1_000_000);
        const victim = page.items[random(page.items.length + 1)];
        if (victim !== undefined) await tx.deleteItem(target, victim.seq);
      } else if (choice === 9) {
        // revoke, or enrol again (a revoked key stays revoked only by the core's rule, not the store's)
        const current = await tx.getEnrolment(target);
        await tx.putEnrolment(enrolment(target, { revokedAt: current?.revokedAt === null ? step : null }));
      } else {
        // rotate a target to a fresh key or onto another live one (its queue appended)
        const into = random(2) === 0 ? `R${(rotations += 1)}` : (targets[random(targets.length)] ?? 'T1');
        if (into !== target) {
          await tx.rotate(target, into, step);
          targets[targets.indexOf(target)] = into;
        }
      }
    });
    if (step % 50 === 0) assertCountersExact(dir);
  }
  assertCountersExact(dir);
  // the API reads the same counters
  const usage = await store.transaction(async (tx) => tx.queueUsage(targets[0] ?? 'T1'));
  const expected = inspect(dir, (db) => db.prepare('SELECT count(*) AS items, coalesce(sum(bytes), 0) AS bytes FROM items WHERE target_pubkey = ?').get(targets[0] ?? 'T1'));
  assert.deepEqual(usage, { items: expected?.items, bytes: expected?.bytes });
  await store.close();
});

test('queue, sender and account usage are charged on insert and released on ack and delete', async () => {
  const { store } = await freshStore();
  await store.transaction(async (tx) => {
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'a', senderPubkey: 'S', account: 'acct' }, 10), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'b', senderPubkey: 'S', account: 'acct' }, 20), 1);
    await tx.insertItem(item({ targetPubkey: 'T', itemId: 'c', senderPubkey: 'R', account: null }, 5), 1);
    await tx.insertItem(item({ targetPubkey: 'U', itemId: 'a', senderPubkey: 'S', account: 'acct' }, 7), 1);
  });
  const read = () => store.transaction(async (tx) => ({
    queue: await tx.queueUsage('T'), sender: await tx.senderUsage('S', 'T'), account: await tx.accountUsage('acct'),
  }), { readOnly: true });
  assert.deepEqual(await read(), { queue: { items: 3, bytes: 35 }, sender: { items: 2, bytes: 30 }, account: { items: 3, bytes: 37 } });
  await store.transaction((tx) => tx.ack('T', 1));
  assert.deepEqual(await read(), { queue: { items: 2, bytes: 25 }, sender: { items: 1, bytes: 20 }, account: { items: 2, bytes: 27 } });
  await store.transaction((tx) => tx.deleteItem('T', 2));
  assert.deepEqual(await read(), { queue: { items: 1, bytes: 5 }, sender: { items: 0, bytes: 0 }, account: { items: 1, bytes: 7 } });
  await store.close();
});

test('the live-enrolment count follows enrolment, re-enrolment, revocation and rotation', async () => {
  const { store, dir } = await freshStore();
  const count = () => store.transaction((tx) => tx.countLiveEnrolments());
  await store.transaction(async (tx) => {
    await tx.putEnrolment(enrolment('A'));
    await tx.putEnrolment(enrolment('B'));
    await tx.putEnrolment(enrolment('C', { revokedAt: 5 }));
  });
  assert.equal(await count(), 2);
  await store.transaction((tx) => tx.putEnrolment(enrolment('A', { hostName: 'renamed' })));
  assert.equal(await count(), 2, 're-enrolling a live key changes nothing');
  await store.transaction((tx) => tx.putEnrolment(enrolment('B', { revokedAt: 9 })));
  assert.equal(await count(), 1, 'a revocation is a live key leaving');
  await store.transaction((tx) => tx.putEnrolment(enrolment('B', { revokedAt: 9, hostName: 'x' })));
  assert.equal(await count(), 1);
  await store.transaction((tx) => tx.rotate('A', 'A2', 10));
  assert.equal(await count(), 1, 'rotation revokes the old key and enrols the new one');
  assertCountersExact(dir);
  await store.close();
});
