// Retention and expiry (design §6, protocol.md §3.9, §7.10). Expired items are deleted in bounded
// batches, one transaction each; their dedup rows stay as tombstones, so a late retry is a
// `duplicate`, never a second delivery. An expired envelope queues for its sender a notice signed
// by the relay key (once: the notice's own dedup row, with sender = the relay key, guards it); none
// goes to a revoked or unknown sender key, and receipts (advisory) and notices expire silently.
// Dedup rows are swept once older than the dedup horizon, never while their item exists.
import { RATE_WINDOW_MS } from '../../common/rate-window.ts';
import { sha256Hex } from '../../protocol/hash.ts';
import { expiredItemId, signExpiredNotice } from '../../protocol/records/expired.ts';
import { dedupHorizonMs, retentionMs } from '../config.ts';
import type { ItemHeader, RelayTransactor } from '../store/relay-store.ts';
import { sweepDedupStep, type DedupSweepLimits, type DedupSweepStep } from '../store/rules/dedup-sweep.ts';
import { isoTime, type CoreContext } from './context.ts';

/** Expired items handled per transaction: keeps each sweep transaction short for the single writer. */
export const SWEEP_BATCH_ITEMS = 500;
/** Dedup rows deleted per transaction. */
export const SWEEP_BATCH_DEDUP = 2_000;
/**
 * Dedup rows walked per transaction, deleted or passed over (rows whose item is still queued, which
 * pile up at the head after retention was lowered): the next transaction goes on after them.
 */
export const SWEEP_WALK_DEDUP = 10_000;
/** Expired challenges and ended rate windows (shared-state.ts) deleted per transaction. */
export const SWEEP_BATCH_SHARED = 2_000;

export interface SweepResult {
  /** items deleted because they expired */
  expired: number;
  /** expiry notices queued for senders */
  notices: number;
  /** dedup rows (tombstones) deleted after the horizon */
  dedupSwept: number;
}

export interface SweepOptions {
  itemBatch?: number;
  dedupBatch?: number;
  dedupWalk?: number;
}

/** One full sweep at the context's current time. Items that expire while it runs wait for the next one. */
export async function sweep(ctx: CoreContext, options: SweepOptions = {}): Promise<SweepResult> {
  const now = ctx.nowMs();
  const itemBatch = options.itemBatch ?? SWEEP_BATCH_ITEMS;
  const dedupBatch = options.dedupBatch ?? SWEEP_BATCH_DEDUP;
  const result: SweepResult = { expired: 0, notices: 0, dedupSwept: 0 };
  for (;;) {
    const batch = await ctx.store.transaction(async (tx) => {
      const expired = await tx.items.expired(now, itemBatch);
      const notified = new Set<string>();
      let notices = 0;
      for (const item of expired) {
        await tx.items.delete(item.targetPubkey, item.seq);
        if (item.kind !== 'envelope' || !(await queueNotice(ctx, tx, item, now))) continue;
        notices += 1;
        notified.add(item.senderPubkey);
      }
      return { expired: expired.length, notices, notified };
    });
    // the senders' held pulls get their notices now
    if (batch.notified.size > 0) ctx.pullWakes.committed(batch.notified);
    result.expired += batch.expired;
    result.notices += batch.notices;
    if (batch.expired < itemBatch) break;
  }
  const horizon = now - dedupHorizonMs(ctx.config);
  const maxWalk = options.dedupWalk ?? SWEEP_WALK_DEDUP;
  // each step goes on after the rows the one before walked, so no row is walked twice in a sweep
  for (let after: number | null = 0; after !== null; ) {
    const limits: DedupSweepLimits = { after, limit: dedupBatch, maxWalk };
    const step: DedupSweepStep = await ctx.store.transaction((tx) => sweepDedupStep(tx.items, horizon, now, limits));
    result.dedupSwept += step.deleted;
    after = step.resumeAfter;
  }
  // what a relay group shares: challenges past their life, rate windows past their minute
  for (let deleted = SWEEP_BATCH_SHARED; deleted >= SWEEP_BATCH_SHARED; ) {
    deleted = await ctx.store.transaction(async (tx) =>
      Math.max(await tx.challenges.deleteExpired(now, SWEEP_BATCH_SHARED), await tx.rateWindows.deleteEnded(now, RATE_WINDOW_MS, SWEEP_BATCH_SHARED)),
    );
  }
  return result;
}

/** Queues the expiry notice of `item` for its sender; false when none is due. */
async function queueNotice(ctx: CoreContext, tx: RelayTransactor, item: ItemHeader, now: number): Promise<boolean> {
  const sender = await tx.enrolments.get(item.senderPubkey);
  if (sender === null || sender.revokedAt !== null) return false;
  const relayPubkey = ctx.relayKey.publicKey;
  const itemId = expiredItemId(item.itemId, item.targetPubkey);
  if ((await tx.items.dedup(relayPubkey, itemId, sender.hostPubkey)) !== null) return false;
  const wire = new TextEncoder().encode(
    signExpiredNotice(
      {
        v: 1,
        type: 'relay-expired',
        item_id: item.itemId,
        target_pubkey: item.targetPubkey,
        accepted_at: isoTime(item.acceptedAt),
        expired_at: isoTime(item.expiresAt),
      },
      ctx.relayKey,
    ),
  );
  await tx.items.insert(
    {
      targetPubkey: sender.hostPubkey,
      kind: 'expired',
      itemId,
      senderPubkey: relayPubkey,
      wire,
      wireHash: sha256Hex(wire),
      acceptedAt: now,
      expiresAt: now + retentionMs(ctx.config),
      account: sender.account,
    },
    now,
  );
  return true;
}
