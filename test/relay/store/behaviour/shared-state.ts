// What the processes of a relay share through its store (src/relay/store/shared-state.ts): enrolment
// challenges (their rule in src/relay/store/rules/challenges.ts, over each backend's primitives) and
// rate windows.
import assert from 'node:assert/strict';
import { openChallenge, takeChallenge } from '../../../../src/relay/store/rules/challenges.ts';
import { storeTest, type OpenStoreUnderTest } from './harness.ts';

export function describeSharedState(open: OpenStoreUnderTest): void {
  storeTest(open, `a challenge is single use, replaced by a newer one for its key, dead at its expiry`, async ({ store }) => {
    await store.transaction(async (tx) => {
      assert.equal(await openChallenge(tx, 'k', 'first', 100, 0, 10), true);
      assert.equal(await openChallenge(tx, 'k', 'second', 101, 1, 10), true);
    });
    assert.equal(await store.transaction((tx) => takeChallenge(tx, 'k', 2)), 'second', 'the newer one replaced the first');
    assert.equal(await store.transaction((tx) => takeChallenge(tx, 'k', 3)), null, 'single use');
    await store.transaction((tx) => openChallenge(tx, 'k', 'late', 110, 10, 10));
    assert.equal(await store.transaction((tx) => takeChallenge(tx, 'k', 110)), null, 'dead at its expiry');
  });

  storeTest(open, `at most maxOpen live challenges; expired ones make room and are swept`, async ({ store }) => {
    const opened = await store.transaction(async (tx) => [
      await openChallenge(tx, 'a', 'ca', 100, 0, 2),
      await openChallenge(tx, 'b', 'cb', 200, 0, 2),
      await openChallenge(tx, 'c', 'cc', 200, 0, 2),
    ]);
    assert.deepEqual(opened, [true, true, false], 'the third is refused while two are live');
    assert.equal(await store.transaction((tx) => takeChallenge(tx, 'c', 1)), null, 'a refused challenge was not stored');
    assert.equal(await store.transaction((tx) => openChallenge(tx, 'b', 'cb2', 300, 1, 2)), true, 'a key may replace its own when full');
    assert.equal(await store.transaction((tx) => openChallenge(tx, 'c', 'cc', 300, 100, 2)), true, 'the expired one made room');
    assert.equal(await store.transaction((tx) => tx.challenges.deleteExpired(1_000, 10)), 2, 'the sweep deletes what expired');
  });

  storeTest(open, `a rate window counts per key for windowMs, then starts again; a clock that went back starts a new one`, async ({ store }) => {
    const count = (key: string, at: number): Promise<number> => store.transaction((tx) => tx.rateWindows.count(key, at, 60_000));
    assert.deepEqual([await count('a', 1_000), await count('a', 2_000), await count('b', 2_000), await count('a', 60_999)], [1, 2, 1, 3]);
    assert.equal(await count('a', 61_000), 1, 'the window ended at start + windowMs');
    assert.equal(await count('a', 500), 1, 'a window starting after now is replaced');
    assert.equal(await store.transaction((tx) => tx.rateWindows.deleteEnded(61_000, 60_000, 10)), 1, 'a (restarted at 500) ended; b (from 2,000) has not');
    assert.equal(await count('b', 3_000), 2, 'b kept its window');
    assert.equal(await count('b', 62_000), 1);
  });
}
