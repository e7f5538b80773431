// Push (design §3, protocol.md §3.3): every target of an item is checked before anything is
// written; one transaction per item (the store may commit the items of one request and of concurrent
// requests together); dedup per (sender, item_id, target); the signed accept receipt goes out only
// after the commit.
import { failPoint } from '../../failpoint.ts';
import { signAccept, type RelayAccept } from '../../protocol/records/accept.ts';
import type { PushRequest, PushResult } from '../../protocol/relay-api/push.ts';
import { retentionMs } from '../config.ts';
import type { Enrolment, RelayReader, RelayTransactor, Usage } from '../store/relay-store.ts';
import { checkItem, type CheckedItem } from './item-checks.ts';
import { isoTime, type CoreContext } from './context.ts';

class ItemRejected extends Error {}

interface StoredTarget {
  hostPubkey: string;
  seq: number;
  wireHash: string;
  acceptedAt: number;
  isNew: boolean;
}

export async function push(ctx: CoreContext, sender: Enrolment, { items }: PushRequest): Promise<{ results: PushResult[] }> {
  const withinRate = await ctx.pushRate.take(sender.hostPubkey, ctx.nowMs());
  // every item is its own transaction, all submitted at once so that they can share one commit
  // (group commit); the store runs them in submission order and the answer keeps that order
  const results = items.map((raw) => {
    const checked = checkItem(raw, sender.hostPubkey, ctx.config.limits);
    return withinRate ? pushItem(ctx, sender, checked) : rejected(checked, 'rate');
  });
  return { results: await Promise.all(results) };
}

function rejected(item: CheckedItem, reason: string): PushResult {
  return { item_id: item.itemId, status: `rejected:${reason}`, targets: [] };
}

async function pushItem(ctx: CoreContext, sender: Enrolment, item: CheckedItem): Promise<PushResult> {
  if (item.failure?.beforeStoreChecks === true) return rejected(item, item.failure.reason);
  let stored: StoredTarget[];
  try {
    stored = await ctx.store.transaction(async (tx) => {
      const targets = await storeItem(ctx, tx, sender, item);
      failPoint('relay.push.before-commit');
      return targets;
    });
  } catch (err) {
    if (err instanceof ItemRejected) return rejected(item, err.message);
    throw err;
  }
  failPoint('relay.push.after-commit');
  const accept: RelayAccept = {
    v: 1,
    type: 'relay-accept',
    relay_pubkey: ctx.relayKey.publicKey,
    epoch: ctx.epoch,
    sender_pubkey: sender.hostPubkey,
    item_id: item.itemId,
    targets: stored.map((t) => ({ host_pubkey: t.hostPubkey, seq: t.seq, wire_hash: t.wireHash })),
    // a duplicate repeats the first acceptance, so a retry never moves the sender's deadline
    at: isoTime(Math.min(...stored.map((t) => t.acceptedAt))),
  };
  return {
    item_id: item.itemId,
    status: stored.some((t) => t.isNew) ? 'accepted' : 'duplicate',
    targets: stored.map((t) => ({ host_pubkey: t.hostPubkey, seq: t.seq })),
    accept,
    sig: signAccept(accept, ctx.relayKey),
  };
}

/** Runs the store checks in protocol order, then writes every new target. Throws ItemRejected to roll back. */
async function storeItem(ctx: CoreContext, tx: RelayTransactor, sender: Enrolment, item: CheckedItem): Promise<StoredTarget[]> {
  const enrolments: Enrolment[] = [];
  for (const key of item.targetKeys) {
    const target = await tx.enrolments.get(key);
    if (target === null || target.revokedAt !== null) throw new ItemRejected('target not enrolled');
    enrolments.push(target);
  }
  for (const key of item.targetKeys) {
    const list = await tx.hostRecords.senderList(key);
    if (list !== null && !list.senders.includes(sender.hostPubkey)) throw new ItemRejected('sender not accepted by target');
  }
  if (item.failure !== null) throw new ItemRejected(item.failure.reason);

  const now = ctx.nowMs();
  const stored: StoredTarget[] = [];
  for (const target of item.targets) {
    const seen = await tx.items.dedup(sender.hostPubkey, item.itemId, target.hostPubkey);
    if (seen !== null && seen.wireHash !== target.wireHash) throw new ItemRejected('conflict');
    stored.push(seen === null
      ? { hostPubkey: target.hostPubkey, seq: 0, wireHash: target.wireHash, acceptedAt: now, isNew: true }
      : { hostPubkey: target.hostPubkey, seq: seen.seq, wireHash: seen.wireHash, acceptedAt: seen.acceptedAt, isNew: false });
  }
  await checkQuotas(ctx, tx, sender, item, enrolments, stored);

  for (const [i, target] of item.targets.entries()) {
    const entry = stored[i];
    if (entry === undefined || !entry.isNew) continue;
    entry.seq = await tx.items.insert({
      targetPubkey: target.hostPubkey,
      kind: item.kind,
      itemId: item.itemId,
      senderPubkey: sender.hostPubkey,
      wire: target.wire,
      wireHash: target.wireHash,
      acceptedAt: now,
      expiresAt: now + retentionMs(ctx.config),
      account: enrolments[i]?.account ?? null,
    }, now);
  }
  return stored;
}

/** Quotas charge only what the relay can prove: the target key, the (sender, target) share, the target's proven account. */
async function checkQuotas(ctx: CoreContext, tx: RelayReader, sender: Enrolment, item: CheckedItem, enrolments: Enrolment[], stored: StoredTarget[]): Promise<void> {
  const limits = ctx.config.limits;
  const accountAdds = new Map<string, Usage>();
  for (const [i, target] of item.targets.entries()) {
    if (stored[i]?.isNew !== true) continue;
    const bytes = target.wire.length;
    const queue = await tx.usage.queue(target.hostPubkey);
    if (queue.items + 1 > limits.max_queue_items) throw new ItemRejected('quota:queue_items');
    if (queue.bytes + bytes > limits.max_queue_bytes) throw new ItemRejected('quota:queue_bytes');
    const share = await tx.usage.sender(sender.hostPubkey, target.hostPubkey);
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

