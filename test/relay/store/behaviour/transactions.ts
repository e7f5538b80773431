import assert from 'node:assert/strict';
import { StoreClosedError, TransactionMisuseError } from '../../../../src/relay/store/errors.ts';
import type { RelayReader, RelayTransactor } from '../../../../src/relay/store/relay-store.ts';
import { enrolment, item, senderList, storeTest, type OpenStoreUnderTest } from './harness.ts';

const ENROLMENT = enrolment('H', { hostName: 'h', account: 'acct' });

/** What every backend promises of read, transaction and close. */
export function describeTransactions(open: OpenStoreUnderTest): void {
  storeTest(open, 'a transaction that throws leaves nothing behind and rejects with the same error', async ({ store }) => {
    const { epoch } = await store.read((reader) => reader.meta.get());
    const boom = new Error('boom');
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.enrolments.put(ENROLMENT);
        await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a', account: 'acct' }), 5);
        await tx.meta.setEpoch('e2');
        await tx.meta.writeHeartbeat(7);
        await tx.meta.appendOpsLog({ at: 7, kind: 'backup', detail: {} });
        await tx.hostRecords.putSenderList(senderList('T', ['S']));
        await tx.accounts.bindCloudKey('H', 'jkt', 7);
        throw boom;
      }),
      (error) => error === boom,
    );
    const state = await store.read(async (reader) => ({
      enrolment: await reader.enrolments.get('H'),
      live: await reader.enrolments.countLive(),
      head: await reader.items.headSeq('T'),
      page: await reader.items.pull('T', 0, 10, 1_000),
      usage: await reader.usage.account('acct'),
      dedup: await reader.items.dedup('sender', 'a', 'T'),
      meta: await reader.meta.get(),
      opsLog: await reader.meta.opsLog(10),
      list: await reader.hostRecords.senderList('T'),
      cloudKey: await reader.accounts.cloudKeyOf('H'),
    }));
    assert.deepEqual(state, {
      enrolment: null,
      live: 0,
      head: 0,
      page: { items: [], more: false },
      usage: { items: 0, bytes: 0 },
      dedup: null,
      meta: { ...state.meta, epoch, heartbeatAt: null },
      opsLog: [],
      list: null,
      cloudKey: null,
    });
  });

  storeTest(open, 'a failed transaction does not disturb the next one, and its seq was never handed out', async ({ store }) => {
    const failing = store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 5);
      throw new Error('no');
    });
    const next = store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 5));
    await assert.rejects(failing, /no/);
    assert.equal(await next, 5, 'the rolled-back seq is allocated again: it was never handed out');
  });

  storeTest(open, 'a reader or transactor refuses use after its read or transaction ended', async ({ store }) => {
    let escaped: RelayTransactor | undefined;
    await store.transaction(async (tx) => {
      escaped = tx;
    });
    assert.ok(escaped !== undefined);
    await assert.rejects(escaped.enrolments.get('H'), TransactionMisuseError);
    await assert.rejects(escaped.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 1), TransactionMisuseError);
    let failed: RelayTransactor | undefined;
    await assert.rejects(
      store.transaction(async (tx) => {
        failed = tx;
        throw new Error('x');
      }),
    );
    await assert.rejects(failed?.enrolments.put(ENROLMENT) ?? Promise.resolve(), TransactionMisuseError);
    let reader: RelayReader | undefined;
    await store.read(async (r) => {
      reader = r;
    });
    await assert.rejects(reader?.items.headSeq('T') ?? Promise.resolve(), TransactionMisuseError);
    assert.equal(await store.read((r) => r.items.headSeq('T')), 0);
  });

  storeTest(open, 'a read cannot write: it does not compile, and at run time a reader has no write methods', async ({ store }) => {
    await assert.rejects(
      store.read(async (reader) => {
        // @ts-expect-error a reader has no put: a write inside a read is a compile error
        await reader.enrolments.put(ENROLMENT);
      }),
      TypeError,
    );
    await assert.rejects(
      store.read(async (reader) => (reader as unknown as RelayTransactor).items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 1)),
      TypeError,
    );
    await store.transaction((tx) => tx.enrolments.put(ENROLMENT));
    assert.equal((await store.read((reader) => reader.enrolments.get('H')))?.hostName, 'h');
    assert.equal(await store.read((reader) => reader.items.headSeq('T')), 0);
  });

  storeTest(open, 'a read sees what committed before it, never what a transaction has not committed', async ({ store }) => {
    await store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: 'a' }), 1));
    let release = (): void => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inserted = (): void => {};
    const insertDone = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    const writing = store.transaction(async (tx) => {
      await tx.items.insert(item({ targetPubkey: 'T', itemId: 'b' }), 1);
      inserted();
      await held;
    });
    await insertDone;
    assert.equal(await store.read((reader) => reader.items.headSeq('T')), 1, 'the open transaction is not seen');
    release();
    await writing;
    assert.equal(await store.read((reader) => reader.items.headSeq('T')), 2);
  });

  storeTest(open, 'concurrent transactions each allocate distinct, consecutive seqs', async ({ store }) => {
    const seqs = await Promise.all(
      Array.from({ length: 50 }, (_, n) => store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'U', itemId: `m${n}` }), 1))),
    );
    assert.deepEqual(
      [...seqs].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, n) => n + 1),
    );
  });

  storeTest(open, 'close lets what was asked finish, then refuses new work; a reopened store has it', async (under) => {
    const queued = [1, 2, 3].map((n) => under.store.transaction((tx) => tx.items.insert(item({ targetPubkey: 'T', itemId: `c${n}` }), 1)));
    const closing = under.store.close();
    await assert.rejects(
      under.store.transaction((tx) => tx.items.headSeq('T')),
      StoreClosedError,
    );
    await assert.rejects(
      under.store.read((reader) => reader.items.headSeq('T')),
      StoreClosedError,
    );
    assert.deepEqual(await Promise.all(queued), [1, 2, 3]);
    await closing;
    await under.store.close(); // twice is fine
    const again = await under.reopen();
    assert.equal(await again.read((reader) => reader.items.headSeq('T')), 3);
  });
}
