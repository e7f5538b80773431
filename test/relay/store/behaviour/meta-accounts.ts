import assert from 'node:assert/strict';
import type { DenyEntry } from '../../../../src/relay/store/accounts.ts';
import { MAX_OPS_LOG_ENTRIES } from '../../../../src/relay/store/relay-store.ts';
import { storeTest, type OpenStoreUnderTest } from './harness.ts';

/** The store's meta (epoch, heartbeat, operations log) and the hosted relay's accounts domain. */
export function describeMetaAndAccounts(open: OpenStoreUnderTest): void {
  storeTest(open, 'meta names the relay key and schema; the epoch and heartbeat are written and survive a reopen', async (under) => {
    const first = await under.store.read((reader) => reader.meta.get());
    assert.equal(first.relayPubkey, under.relayPubkey);
    assert.ok(Number.isSafeInteger(first.schemaVersion) && first.schemaVersion > 0);
    assert.match(first.epoch, /^[A-Za-z0-9_-]{16,}$/);
    assert.equal(first.heartbeatAt, null, 'no heartbeat yet');
    await under.store.transaction(async (tx) => {
      await tx.meta.setEpoch('epoch-2');
      await tx.meta.writeHeartbeat(1_234);
    });
    const again = await under.reopen();
    assert.deepEqual(await again.read((reader) => reader.meta.get()), { ...first, epoch: 'epoch-2', heartbeatAt: 1_234 });
    await assert.rejects(
      again.transaction((tx) => tx.meta.writeHeartbeat(1.5)),
      TypeError,
      'a heartbeat is a whole ms',
    );
  });

  storeTest(open, 'the operations log reads newest first up to a limit and keeps at most MAX_OPS_LOG_ENTRIES', async ({ store }) => {
    await store.transaction(async (tx) => {
      await tx.meta.appendOpsLog({ at: 1, kind: 'restore', detail: { file: 'a' } });
      await tx.meta.appendOpsLog({ at: 2, kind: 'epoch-rotated', detail: { reason: 'operator' } });
      await tx.meta.appendOpsLog({ at: 3, kind: 'backup', detail: { nested: { n: 1 } } });
    });
    const newest = await store.read((reader) => reader.meta.opsLog(2));
    assert.deepEqual(
      newest.map(({ at, kind, detail }) => ({ at, kind, detail })),
      [
        { at: 3, kind: 'backup', detail: { nested: { n: 1 } } },
        { at: 2, kind: 'epoch-rotated', detail: { reason: 'operator' } },
      ],
    );
    assert.ok((newest[0]?.id ?? 0) > (newest[1]?.id ?? 0), 'ids grow');
    await store.transaction(async (tx) => {
      for (let n = 0; n < MAX_OPS_LOG_ENTRIES; n += 1) await tx.meta.appendOpsLog({ at: 10 + n, kind: 'backup', detail: {} });
    });
    const all = await store.read((reader) => reader.meta.opsLog(MAX_OPS_LOG_ENTRIES + 10));
    assert.equal(all.length, MAX_OPS_LOG_ENTRIES, 'the oldest entries beyond the cap are dropped');
    assert.equal(all.at(-1)?.at, 10);
  });

  storeTest(open, 'a cloud key binds to one host key; binding either side again replaces the earlier binding', async ({ store }) => {
    await store.transaction((tx) => tx.accounts.bindCloudKey('H1', 'jkt-1', 5));
    const read = () =>
      store.read(async (reader) => [
        await reader.accounts.cloudKeyOf('H1'),
        await reader.accounts.cloudKeyOf('H2'),
        await reader.accounts.cloudKeyOwner('jkt-1'),
        await reader.accounts.cloudKeyOwner('jkt-2'),
      ]);
    assert.deepEqual(await read(), ['jkt-1', null, 'H1', null]);
    await store.transaction((tx) => tx.accounts.bindCloudKey('H1', 'jkt-2', 6));
    assert.deepEqual(await read(), ['jkt-2', null, null, 'H1'], 'a new cloud key for the host replaces its old one');
    await store.transaction((tx) => tx.accounts.bindCloudKey('H2', 'jkt-2', 7));
    assert.deepEqual(await read(), [null, 'jkt-2', null, 'H2'], 'the cloud key moves to the host that certified it last');
  });

  storeTest(open, 'the deny-list keeps the later until, matches a host fingerprint or client id, and forgets expired entries', async ({ store }) => {
    const entry = (kind: DenyEntry['kind'], value: string, untilMs: number, reason = 'r'): DenyEntry => ({ kind, value, reason, untilMs, addedAt: 1 });
    await store.transaction((tx) => tx.accounts.putDenyEntries([entry('host_fp', 'FP1', 100), entry('client_id', 'C1', 50), entry('host_fp', 'FP2', 20)], 10));
    await store.transaction((tx) => tx.accounts.putDenyEntries([entry('host_fp', 'FP1', 80, 'again')], 10));
    const state = await store.read(async (reader) => ({
      fp1: await reader.accounts.findDenyEntry('FP1', null, 10),
      byClient: await reader.accounts.findDenyEntry('other', 'C1', 10),
      clientNotAsked: await reader.accounts.findDenyEntry('other', null, 10),
      clientValueIsNotAFingerprint: await reader.accounts.findDenyEntry('C1', null, 10),
      expired: await reader.accounts.findDenyEntry('FP2', null, 20),
      liveAt10: await reader.accounts.countLiveDenyEntries(10),
      liveAt60: await reader.accounts.countLiveDenyEntries(60),
    }));
    assert.deepEqual(state.fp1, entry('host_fp', 'FP1', 100, 'again'), 'the later until stays, the new reason is taken');
    assert.deepEqual(state.byClient, entry('client_id', 'C1', 50));
    assert.equal(state.clientNotAsked, null);
    assert.equal(state.clientValueIsNotAFingerprint, null);
    assert.equal(state.expired, null, 'an entry stops applying at its until');
    assert.equal(state.liveAt10, 3);
    assert.equal(state.liveAt60, 1);
  });
}
