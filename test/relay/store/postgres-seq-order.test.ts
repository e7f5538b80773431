// PostgreSQL seq allocation under concurrent writers from two pools (two relay processes): seqs are
// never reused, and no reader ever sees seq n+1 committed while n is still in flight (a receiver
// acking through n+1 would lose n). The design (src/relay/store/postgres/items.ts): the seq comes
// from an upsert that keeps the target's seq row locked until commit, so commits per target happen
// in seq order.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openPostgresRelayStore } from '../../../src/relay/store/postgres/open-store.ts';
import type { PostgresRelayStore } from '../../../src/relay/store/postgres/postgres-relay-store.ts';
import { freshPostgresDatabase } from '../../helpers/postgres-test-cluster.ts';
import { waitUntil } from '../../helpers/wait.ts';
import { enrolment, item } from './behaviour/harness.ts';
import { newKey, RELAY_KEY } from './store-fixtures.ts';

/** Writers per pool in the concurrent run, and items each writes. */
const WRITERS_PER_POOL = 8;
const ITEMS_PER_WRITER = 25;
const NOW_MS = 1_000;

const database = await freshPostgresDatabase();

describe('PostgreSQL seq allocation', { skip: 'skip' in database ? database.skip : false }, () => {
  const url = 'url' in database ? database.url : '';
  let first: PostgresRelayStore;
  let second: PostgresRelayStore;
  let observer: pg.Client;

  before(async () => {
    first = await openPostgresRelayStore({ url, relayPubkey: RELAY_KEY });
    second = await openPostgresRelayStore({ url, relayPubkey: RELAY_KEY });
    observer = new pg.Client({ connectionString: url });
    await observer.connect();
  });
  after(async () => {
    await observer.end();
    await Promise.all([first.close(), second.close()]);
  });

  /** Seqs of the target's items a fresh snapshot shows, in order. */
  async function visibleSeqs(store: PostgresRelayStore, target: string): Promise<number[]> {
    return store.read(async (reader) => (await reader.items.pull(target, 0, 100_000, Number.MAX_SAFE_INTEGER)).items.map((i) => i.seq));
  }

  test('a second writer for the target waits for the first to commit, and gets the next seq only then', async () => {
    const target = newKey();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstSeq = 0;
    const holding = first.transaction(async (tx) => {
      firstSeq = await tx.items.insert(item({ targetPubkey: target, itemId: 'held' }), NOW_MS);
      await gate;
      return firstSeq;
    });
    await waitUntil('the first writer to hold its seq', 10_000, async () => (firstSeq > 0 ? null : 'no seq yet'));
    let secondSeq = 0;
    const waiting = second.transaction(async (tx) => {
      secondSeq = await tx.items.insert(item({ targetPubkey: target, itemId: 'next' }), NOW_MS);
      return secondSeq;
    });
    // the second writer's backend is blocked on a lock, not racing ahead
    await waitUntil('the second writer to wait on a lock', 10_000, async () => {
      const { rows } = await observer.query(`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      return rows[0].n >= 1 ? null : 'no backend waits on a lock';
    });
    assert.equal(secondSeq, 0, 'no seq was handed out while the first writer is in flight');
    assert.deepEqual(await visibleSeqs(first, target), [], 'nothing is visible before the first commit');
    release();
    assert.equal(await holding, firstSeq);
    assert.equal(await waiting, firstSeq + 1);
    assert.deepEqual(await visibleSeqs(second, target), [firstSeq, firstSeq + 1]);
  });

  test('concurrent writers on two pools: seqs unique and increasing, and every snapshot a prefix of the final queue', async () => {
    const target = newKey();
    const snapshots: number[][] = [];
    let writing = true;
    const watch = (async () => {
      while (writing) snapshots.push(await visibleSeqs(first, target));
    })();
    const writers = [first, second].flatMap((store, pool) =>
      Array.from({ length: WRITERS_PER_POOL }, async (_, writer) => {
        const seqs: number[] = [];
        for (let n = 0; n < ITEMS_PER_WRITER; n += 1) {
          seqs.push(await store.transaction((tx) => tx.items.insert(item({ targetPubkey: target, itemId: `p${pool}-w${writer}-${n}` }), NOW_MS)));
        }
        return seqs;
      }),
    );
    const allocated = (await Promise.all(writers)).flat();
    writing = false;
    await watch;

    const final = await visibleSeqs(second, target);
    assert.equal(new Set(allocated).size, allocated.length, 'no seq was handed out twice');
    assert.deepEqual(
      final,
      [...allocated].sort((a, b) => a - b),
    );
    assert.ok(snapshots.length > 1, 'the reader looked while writers wrote');
    for (const seen of snapshots) {
      // a snapshot shows the first k seqs of the final queue, never a later one without an earlier
      assert.deepEqual(seen, final.slice(0, seen.length), `a reader saw ${seen.at(-1)} without every seq before it`);
    }
  });

  test('two processes taking two targets in opposite orders: the server picks a deadlock victim, which runs again and commits', async () => {
    const [left, right] = [newKey(), newKey()];
    let arrived = 0;
    let meet!: () => void;
    const bothHold = new Promise<void>((resolve) => {
      meet = resolve;
    });
    const runs = { first: 0, second: 0 };
    const crossing = (store: PostgresRelayStore, run: 'first' | 'second', mine: string, theirs: string) =>
      store.transaction(async (tx) => {
        runs[run] += 1;
        await tx.items.dedup('sender', `${run}-a`, mine); // takes `mine`'s lock
        if (runs[run] === 1) {
          arrived += 1;
          if (arrived === 2) meet();
          await bothHold;
        }
        await tx.items.dedup('sender', `${run}-b`, theirs); // waits for the other's
        await tx.items.insert(item({ targetPubkey: theirs, itemId: `${run}-b` }), NOW_MS);
        return tx.items.insert(item({ targetPubkey: mine, itemId: `${run}-a` }), NOW_MS);
      });
    const seqs = await Promise.all([crossing(first, 'first', left, right), crossing(second, 'second', right, left)]);
    assert.equal(seqs.length, 2);
    assert.equal(runs.first + runs.second, 3, 'exactly one of the two ran again');
    assert.deepEqual((await visibleSeqs(first, left)).length, 2);
    assert.deepEqual((await visibleSeqs(first, right)).length, 2);
  });
  test('two processes enrolling one new key: the second waits for the first, and the live counter moves once', async () => {
    const key = newKey();
    const live = await first.read((reader) => reader.enrolments.countLive());
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let sawNone = false;
    const holding = first.transaction(async (tx) => {
      const none = (await tx.enrolments.get(key)) === null;
      await tx.enrolments.put(enrolment(key, { hostName: 'racer-a' }));
      sawNone = none;
      await gate; // the row is written, not committed
    });
    await waitUntil('the first enrolment to write the key', 10_000, async () => (sawNone ? null : 'not read yet'));
    let secondDone = false;
    const racing = second
      .transaction(async (tx) => {
        const existing = await tx.enrolments.get(key);
        await tx.enrolments.put(enrolment(key, { hostName: existing === null ? 'racer-b' : existing.hostName }));
      })
      .then(() => {
        secondDone = true;
      });
    // release the first once the second either finished (no lock: the race) or waits on a lock
    await waitUntil('the second enrolment to wait or finish', 10_000, async () => {
      const waiting = await observer.query('SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted');
      return secondDone || (waiting.rows[0] as { n: number }).n > 0 ? null : 'still running';
    });
    release();
    await Promise.all([holding, racing]);
    assert.equal(await first.read((reader) => reader.enrolments.countLive()), live + 1);
    assert.equal((await first.read((reader) => reader.enrolments.get(key)))?.hostName, 'racer-a', "the second saw the first's row");
  });

  test('two processes enrolling one name in one account: the second finds it taken (NAME_TAKEN), not a unique violation', async () => {
    const account = `account-${newKey()}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let written = false;
    const holding = first.transaction(async (tx) => {
      assert.equal(await tx.enrolments.nameTakenInAccount(account, 'Shared-Box', 'key-a'), false);
      await tx.enrolments.put(enrolment(newKey(), { hostName: 'shared-box', account }));
      written = true;
      await gate; // the row is written, not committed
    });
    await waitUntil('the first enrolment to write the name', 10_000, async () => (written ? null : 'not written yet'));
    let secondDone = false;
    // what the core does (core/enrolment.ts): check the name, then put
    const racing = second
      .transaction(async (tx) => {
        if (await tx.enrolments.nameTakenInAccount(account, 'shared-box', 'key-b')) return 'taken';
        await tx.enrolments.put(enrolment(newKey(), { hostName: 'SHARED-BOX', account }));
        return 'enrolled';
      })
      .finally(() => {
        secondDone = true;
      });
    racing.catch(() => {});
    await waitUntil('the second enrolment to wait or finish', 10_000, async () => {
      const waiting = await observer.query('SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted');
      return secondDone || (waiting.rows[0] as { n: number }).n > 0 ? null : 'still running';
    });
    release();
    await holding;
    assert.equal(await racing, 'taken');
  });
});
