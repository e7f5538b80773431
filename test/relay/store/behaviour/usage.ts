import assert from 'node:assert/strict';
import type { Enrolment, RelayStore, Usage } from '../../../../src/relay/store/relay-store.ts';
import { rotateKey } from '../../../../src/relay/store/rules/rotation.ts';
import { enrolment as baseEnrolment, item, storeTest, type OpenStoreUnderTest } from './harness.ts';

/** Deterministic pseudo-random numbers (an LCG), so a failing sequence replays exactly. */
function seeded(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

/** Each key its own name: keys of one account may not share a live name. */
function enrolment(hostPubkey: string, fields: Partial<Enrolment> = {}): Enrolment {
  return baseEnrolment(hostPubkey, { hostName: `host-${hostPubkey}`, ...fields });
}

const NONE: Usage = { items: 0, bytes: 0 };

function charge(totals: Map<string, Usage>, key: string, bytes: number): void {
  const usage = totals.get(key) ?? { items: 0, bytes: 0 };
  totals.set(key, { items: usage.items + 1, bytes: usage.bytes + bytes });
}

/** What the items, pulled through the API, add up to. */
interface World {
  keys: Set<string>;
  senders: string[];
  accountOf: Map<string, string | null>;
}

/** Every usage counter and the live-enrolment count equal the aggregates over what is stored. */
async function assertCountersExact(store: RelayStore, world: World): Promise<void> {
  await store.read(async (reader) => {
    const queues = new Map<string, Usage>();
    const shares = new Map<string, Usage>();
    const accounts = new Map<string, Usage>();
    let live = 0;
    for (const key of world.keys) {
      for (const stored of (await reader.items.pull(key, 0, 100_000, Number.MAX_SAFE_INTEGER)).items) {
        const bytes = stored.wire.byteLength;
        charge(queues, key, bytes);
        charge(shares, `${stored.senderPubkey} ${key}`, bytes);
        const account = world.accountOf.get(stored.itemId) ?? null;
        if (account !== null) charge(accounts, account, bytes);
      }
      if ((await reader.enrolments.get(key))?.revokedAt === null) live += 1;
    }
    for (const key of world.keys) {
      assert.deepEqual(await reader.usage.queue(key), queues.get(key) ?? NONE, `queue usage of ${key}`);
      for (const sender of world.senders)
        assert.deepEqual(await reader.usage.sender(sender, key), shares.get(`${sender} ${key}`) ?? NONE, `usage of ${sender} at ${key}`);
    }
    for (const account of new Set(world.accountOf.values())) {
      if (account !== null) assert.deepEqual(await reader.usage.account(account), accounts.get(account) ?? NONE, `usage of ${account}`);
    }
    assert.equal(await reader.enrolments.countLive(), live);
  });
}

export function describeUsage(open: OpenStoreUnderTest): void {
  storeTest(open, 'usage counters equal the real aggregates after a long mixed sequence of operations', async ({ store }) => {
    const random = seeded(7);
    const targets = ['T1', 'T2', 'T3', 'T4', 'T5'];
    const senders = ['S1', 'S2', 'S3'];
    const accounts = [null, 'acct-a', 'acct-b'];
    let rotations = 0;
    const world: World = { keys: new Set(targets), senders, accountOf: new Map() };
    await store.transaction(async (tx) => {
      for (const target of targets) await tx.enrolments.put(enrolment(target, { account: 'acct-a' }));
    });
    for (let step = 0; step < 400; step += 1) {
      const target = targets[random(targets.length)] ?? 'T1';
      const choice = random(11);
      await store.transaction(async (tx) => {
        if (choice < 5) {
          const account = accounts[random(accounts.length)] ?? null;
          world.accountOf.set(`i${step}`, account);
          await tx.items.insert(
            item(
              {
                targetPubkey: target,
                itemId: `i${step}`,
                senderPubkey: senders[random(senders.length)] ?? 'S1',
                account,
              },
              1 + random(50),
            ),
            step,
          );
        } else if (choice < 7) {
          const page = await tx.items.pull(target, 0, 5, 1_000_000);
          const last = page.items[random(page.items.length + 1)];
          if (last !== undefined) await tx.items.ack(target, last.seq);
        } else if (choice < 9) {
          const page = await tx.items.pull(target, 0, 5, 1_000_000);
          const victim = page.items[random(page.items.length + 1)];
          if (victim !== undefined) await tx.items.delete(target, victim.seq);
        } else if (choice === 9) {
          // revoke, or enrol again (a revoked key stays revoked only by the core's rule, not the store's)
          const current = await tx.enrolments.get(target);
          await tx.enrolments.put(enrolment(target, { revokedAt: current?.revokedAt === null ? step : null }));
        } else {
          // rotate a target to a fresh key or onto another live one (its queue appended)
          const fresh = random(2) === 0;
          if (fresh) rotations += 1;
          const into = fresh ? `R${rotations}` : (targets[random(targets.length)] ?? 'T1');
          if (into !== target) {
            await rotateKey(tx, target, into, step);
            targets[targets.indexOf(target)] = into;
            world.keys.add(into);
          }
        }
      });
      if (step % 50 === 0) await assertCountersExact(store, world);
    }
    await assertCountersExact(store, world);
  });

  storeTest(open, 'queue, sender and account usage are charged on insert and released on ack and delete', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a', senderPubkey: 'S', account: 'acct' }, 10), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b', senderPubkey: 'S', account: 'acct' }, 20), 1);
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'c', senderPubkey: 'R', account: null }, 5), 1);
      await tx.items.insert(item({ targetPubkey: 'U', itemId: 'a', senderPubkey: 'S', account: 'acct' }, 7), 1);
    });
    const read = () =>
      store.read(async (tx) => ({
        queue: await tx.usage.queue('T'),
        sender: await tx.usage.sender('S', 'T'),
        account: await tx.usage.account('acct'),
      }));
    assert.deepEqual(await read(), { queue: { items: 3, bytes: 35 }, sender: { items: 2, bytes: 30 }, account: { items: 3, bytes: 37 } });
    await store.transaction((tx) => tx.items.ack('T', 1));
    assert.deepEqual(await read(), { queue: { items: 2, bytes: 25 }, sender: { items: 1, bytes: 20 }, account: { items: 2, bytes: 27 } });
    await store.transaction((tx) => tx.items.delete('T', 2));
    assert.deepEqual(await read(), { queue: { items: 1, bytes: 5 }, sender: { items: 0, bytes: 0 }, account: { items: 1, bytes: 7 } });
  });

  storeTest(open, 'the live-enrolment count follows enrolment, re-enrolment, revocation and rotation', async ({ store }) => {
    const count = () => store.transaction((tx) => tx.enrolments.countLive());
    await store.transaction(async (tx) => {
      await tx.enrolments.put(enrolment('A'));
      await tx.enrolments.put(enrolment('B'));
      await tx.enrolments.put(enrolment('C', { revokedAt: 5 }));
    });
    assert.equal(await count(), 2);
    await store.transaction((tx) => tx.enrolments.put(enrolment('A', { hostName: 'renamed' })));
    assert.equal(await count(), 2, 're-enrolling a live key changes nothing');
    await store.transaction((tx) => tx.enrolments.put(enrolment('B', { revokedAt: 9 })));
    assert.equal(await count(), 1, 'a revocation is a live key leaving');
    await store.transaction((tx) => tx.enrolments.put(enrolment('B', { revokedAt: 9, hostName: 'x' })));
    assert.equal(await count(), 1);
    await store.transaction((tx) => rotateKey(tx, 'A', 'A2', 10));
    assert.equal(await count(), 1, 'rotation revokes the old key and enrols the new one');
  });
}
