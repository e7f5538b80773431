// The store half of a push (design §3, protocol.md §3.3): each checked item of a request in its own
// transaction, all submitted at once so that they can share one commit (group commit); the store
// runs them in submission order. Every target of an item is checked before anything is written;
// dedup per (sender, item_id, target); quotas charge only what the relay can prove.
import { failPoint } from '../../failpoint.ts';
import type { ItemRefusal, ItemRefusalCode } from '../../protocol/relay-api/item-results.ts';
import { retentionMs, type RelayConfig, type RelayLimits } from '../config.ts';
import type { Enrolment, RelayReader, RelayStore, RelayTransactor, Usage } from '../store/relay-store.ts';
import type { CheckedItem } from './item-checks.ts';
import type { PushRate, PushRateGate } from './push-rate.ts';

/** Thrown by a store check; the item's transaction writes nothing and the item answers its code. */
class ItemRejected extends Error {
  readonly refusal: ItemRefusal;

  constructor(refusal: ItemRefusal | ItemRefusalCode) {
    super(typeof refusal === 'string' ? refusal : refusal.code);
    this.refusal = typeof refusal === 'string' ? { code: refusal } : refusal;
  }
}

export interface StoredTarget {
  hostPubkey: string;
  seq: number;
  wireHash: string;
  acceptedAt: number;
  isNew: boolean;
}

/** What an item's transaction did: stored its targets (new or duplicate), or wrote nothing and names the reason. */
export type ItemOutcome = { stored: StoredTarget[] } | { rejected: ItemRefusal };

const RATE: ItemOutcome = { rejected: { code: 'rate' } };

/** Writes the checked items of one push request. */
export interface PushWriter {
  /** the outcome of every item, in the request's order, once every stored one is durable */
  write(senderPubkey: string, items: CheckedItem[]): Promise<ItemOutcome[]>;
}

export interface PushWriteDeps {
  store: RelayStore;
  config: RelayConfig;
  nowMs: () => number;
  /** push requests per sender key per minute, counted where the items are written */
  pushRate: PushRate;
}

export function storePushWriter(deps: PushWriteDeps): PushWriter {
  return {
    write(senderPubkey, items) {
      const rate = deps.pushRate.open(senderPubkey, deps.nowMs());
      return Promise.all(items.map((item, index) => writeItem(deps, senderPubkey, item, rate, index)));
    },
  };
}

/** `index`: the item's place in its request; the first item's transaction is sure to count a store-kept push rate. */
async function writeItem(deps: PushWriteDeps, senderPubkey: string, item: CheckedItem, rate: PushRateGate, index: number): Promise<ItemOutcome> {
  if (rate.known() === false) return RATE;
  const early = item.failure?.beforeStoreChecks === true ? item.failure.refusal : null;
  const first = index === 0;
  if (early !== null && !(first && rate.countsInStore)) return (await rate.verdict) ? { rejected: early } : RATE;
  try {
    return await deps.store.transaction(async (tx): Promise<ItemOutcome> => {
      try {
        if (!(await rate.admits(tx, index))) return RATE;
        if (early !== null) return { rejected: early };
        const outcome = await storeItem(deps, tx, senderPubkey, item);
        failPoint('relay.push.before-commit');
        return outcome;
      } catch (err) {
        // the store rolls this transaction back: a count it made goes with it
        rate.rolledBack(index);
        throw err;
      }
    });
  } catch (err) {
    if (first) rate.fail(err);
    throw err;
  }
}

/**
 * Runs the store checks in protocol order, then writes every new target. Every check runs before the
 * first write, so a rejected item has written nothing: its transaction still commits (it may hold
 * the request's push-rate count).
 */
async function storeItem(deps: PushWriteDeps, tx: RelayTransactor, senderPubkey: string, item: CheckedItem): Promise<ItemOutcome> {
  try {
    return { stored: await checkAndWrite(deps, tx, senderPubkey, item) };
  } catch (err) {
    if (err instanceof ItemRejected) return { rejected: err.refusal };
    throw err;
  }
}

async function checkAndWrite(deps: PushWriteDeps, tx: RelayTransactor, senderPubkey: string, item: CheckedItem): Promise<StoredTarget[]> {
  const enrolments: Enrolment[] = [];
  for (const key of item.targetKeys) {
    const target = await tx.enrolments.get(key);
    if (target === null || target.revokedAt !== null) throw new ItemRejected('target not enrolled');
    enrolments.push(target);
  }
  for (const key of item.targetKeys) {
    const list = await tx.hostRecords.senderList(key);
    if (list !== null && !list.senders.includes(senderPubkey)) throw new ItemRejected('sender not accepted by target');
  }
  if (item.failure !== null) throw new ItemRejected(item.failure.refusal);

  const now = deps.nowMs();
  const stored: StoredTarget[] = [];
  for (const target of item.targets) {
    const seen = await tx.items.dedup(senderPubkey, item.itemId, target.hostPubkey);
    if (seen !== null && seen.wireHash !== target.wireHash) throw new ItemRejected('conflict');
    stored.push(
      seen === null
        ? { hostPubkey: target.hostPubkey, seq: 0, wireHash: target.wireHash, acceptedAt: now, isNew: true }
        : { hostPubkey: target.hostPubkey, seq: seen.seq, wireHash: seen.wireHash, acceptedAt: seen.acceptedAt, isNew: false },
    );
  }
  await checkQuotas(deps.config.limits, tx, senderPubkey, item, enrolments, stored);

  for (const [i, target] of item.targets.entries()) {
    const entry = stored[i];
    if (entry === undefined || !entry.isNew) continue;
    entry.seq = await tx.items.insert(
      {
        targetPubkey: target.hostPubkey,
        kind: item.kind,
        itemId: item.itemId,
        senderPubkey: senderPubkey,
        wire: target.wire,
        wireHash: target.wireHash,
        acceptedAt: now,
        expiresAt: now + retentionMs(deps.config),
        account: enrolments[i]?.account ?? null,
      },
      now,
    );
  }
  return stored;
}

/** Quotas charge only what the relay can prove: the target key, the (sender, target) share, the target's proven account. */
async function checkQuotas(
  limits: RelayLimits,
  tx: RelayReader,
  senderPubkey: string,
  item: CheckedItem,
  enrolments: Enrolment[],
  stored: StoredTarget[],
): Promise<void> {
  const accountAdds = new Map<string, Usage>();
  for (const [i, target] of item.targets.entries()) {
    if (stored[i]?.isNew !== true) continue;
    const bytes = target.wire.length;
    const queue = await tx.usage.queue(target.hostPubkey);
    if (queue.items + 1 > limits.max_queue_items) throw new ItemRejected('quota:queue_items');
    if (queue.bytes + bytes > limits.max_queue_bytes) throw new ItemRejected('quota:queue_bytes');
    const share = await tx.usage.sender(senderPubkey, target.hostPubkey);
    if (share.items + 1 > limits.max_sender_items) throw new ItemRejected('quota:sender_items');
    if (share.bytes + bytes > limits.max_sender_bytes) throw new ItemRejected('quota:sender_bytes');
    const account = enrolments[i]?.account ?? null;
    if (account === null) continue;
    const pending = accountAdds.get(account) ?? { items: 0, bytes: 0 };
    pending.items += 1;
    pending.bytes += bytes;
    accountAdds.set(account, pending);
    const used = await tx.usage.account(account);
    if (used.items + pending.items > limits.max_owner_items) throw new ItemRejected('quota:account_items');
    if (used.bytes + pending.bytes > limits.max_owner_bytes) throw new ItemRejected('quota:account_bytes');
  }
}
