// The one door between the relay's rules (core) and its state (design §2). The core never sees
// SQL; a backend is a folder beside this file (sqlite/ first). Methods are asynchronous although
// node:sqlite is synchronous, so that a backend for several relay processes fits later.
//
// Times are Unix milliseconds (numbers) throughout; the core turns them into ISO strings on the wire.
import type { HostedTx } from './hosted-store.ts';
import type { ChallengeTransactor, RateWindowTransactor } from './shared-state.ts';

export interface Enrolment {
  hostPubkey: string;
  hostName: string;
  ownerFp: string;
  /** the proven account, or null (host-key challenge proves none) */
  account: string | null;
  org: string | null;
  /** which authority admitted the key: 'host-key', 'account-token', … */
  authorizedBy: string;
  enrolledAt: number;
  revokedAt: number | null;
}

export interface EncAd {
  hostPubkey: string;
  encPub: string;
  /** 2 for a signed v2 ad (record + sig), 1 for a legacy {v:1, host, enc_pub} signature */
  version: 1 | 2;
  /** the exact JSON text of the signed ad record (v2) or null (v1) */
  record: string | null;
  sig: string;
  /** iat of the v2 ad (ms); for v1, the time it was stored */
  iat: number;
  /** exp of the v2 ad (ms); null for v1 */
  exp: number | null;
  at: number;
}

export interface SenderList {
  targetPubkey: string;
  senders: string[];
  iat: number;
  /** exact JSON text of the signed list record */
  record: string;
  sig: string;
}

export type ItemKind = 'envelope' | 'receipt' | 'expired';

export interface NewItem {
  targetPubkey: string;
  kind: ItemKind;
  itemId: string;
  senderPubkey: string;
  wire: Uint8Array;
  /** lowercase hex SHA-256 of `wire` */
  wireHash: string;
  acceptedAt: number;
  expiresAt: number;
  /** the proven account the item is charged to (the target's), or null */
  account: string | null;
}

export interface StoredItem {
  targetPubkey: string;
  seq: number;
  kind: ItemKind;
  itemId: string;
  senderPubkey: string;
  wire: Uint8Array;
  wireHash: string;
  bytes: number;
  acceptedAt: number;
  expiresAt: number;
}

/** An item's metadata without its bytes (sweeps and listings). */
export type ItemHeader = Omit<StoredItem, 'wire'>;

/** Where a dedup sweep step starts and how much it may do (one step is one write transaction). */
export interface DedupSweepLimits {
  /** the `resumeAfter` of the step before, 0 for the first step of a sweep */
  after: number;
  /** rows deleted at most */
  limit: number;
  /** rows walked at most, deleted or passed over: bounds the time the step holds the writer */
  maxWalk: number;
}

export interface DedupSweepStep {
  deleted: number;
  /** where the next step goes on from, or null when the walk reached its end */
  resumeAfter: number | null;
}

export interface DedupRow {
  senderPubkey: string;
  itemId: string;
  targetPubkey: string;
  wireHash: string;
  seq: number;
  acceptedAt: number;
}

export interface Usage {
  items: number;
  bytes: number;
}

/** What a pull page carries of each item. */
export type PulledItem = Pick<StoredItem, 'seq' | 'kind' | 'itemId' | 'senderPubkey' | 'wire'>;

export interface PullPage {
  items: PulledItem[];
  /** whether items remain after the last one returned */
  more: boolean;
}

export interface StoreMeta {
  epoch: string;
  relayPubkey: string;
  schemaVersion: number;
  /** last heartbeat written (ms), or null if none yet */
  heartbeatAt: number | null;
}

/** What the operations log records (restores, epoch rotations, backups). */
export type OpsLogKind = 'restore' | 'epoch-rotated' | 'backup';

export interface OpsLogEntry {
  at: number;
  kind: OpsLogKind;
  /** a small JSON object saying what happened and why (never key material) */
  detail: Record<string, unknown>;
}

export interface StoredOpsLogEntry extends OpsLogEntry {
  id: number;
}

export interface RotationResult {
  /** items moved from the old key's queue to the new key's */
  moved: number;
}

/** Everything the core may read or write, valid only inside `RelayStore.transaction`. */
export interface RelayTx extends HostedTx {
  /** enrolment challenges shared by a relay's processes */
  challenges: ChallengeTransactor;
  /** request windows shared by a relay's processes */
  rateWindows: RateWindowTransactor;
  meta(): Promise<StoreMeta>;
  setEpoch(epoch: string): Promise<void>;
  writeHeartbeat(atMs: number): Promise<void>;
  /** appends to the operations log (the oldest entries beyond its cap are dropped) */
  appendOpsLog(entry: OpsLogEntry): Promise<void>;
  /** the newest `limit` entries of the operations log, newest first */
  opsLog(limit: number): Promise<StoredOpsLogEntry[]>;

  getEnrolment(hostPubkey: string): Promise<Enrolment | null>;
  /** live (not revoked) enrolments whose name matches case-insensitively, at most `limit` */
  liveEnrolmentsByName(hostName: string, limit: number): Promise<Enrolment[]>;
  /** whether another live key carries this name (case-insensitively) inside `account` */
  nameTakenInAccount(account: string, hostName: string, exceptPubkey: string): Promise<boolean>;
  countLiveEnrolments(): Promise<number>;
  /** inserts or replaces the row for `enrolment.hostPubkey` (the core decides what may change) */
  putEnrolment(enrolment: Enrolment): Promise<void>;

  getEncAd(hostPubkey: string): Promise<EncAd | null>;
  putEncAd(ad: EncAd): Promise<void>;

  getSenderList(targetPubkey: string): Promise<SenderList | null>;
  putSenderList(list: SenderList): Promise<void>;

  getDedup(senderPubkey: string, itemId: string, targetPubkey: string): Promise<DedupRow | null>;
  /**
   * Allocates the next seq for the target — max(next_seq, nowMs), never reused — and inserts the
   * item and its dedup row, charging the usage counters. Returns the seq.
   */
  insertItem(item: NewItem, nowMs: number): Promise<number>;

  queueUsage(targetPubkey: string): Promise<Usage>;
  senderUsage(senderPubkey: string, targetPubkey: string): Promise<Usage>;
  accountUsage(account: string): Promise<Usage>;

  /** items with seq > after in seq order: at most `limit`, stopping before `maxBytes` but never empty when items remain */
  pull(targetPubkey: string, after: number, limit: number, maxBytes: number): Promise<PullPage>;
  /** highest seq allocated for the target, 0 if none */
  headSeq(targetPubkey: string): Promise<number>;
  ackedThrough(targetPubkey: string): Promise<number>;
  /** deletes the target's items with seq ≤ through; acked_through = max(old, through). Returns the count deleted. */
  ack(targetPubkey: string, through: number): Promise<number>;

  /** items whose expires_at ≤ nowMs, oldest first, at most `limit` */
  expiredItems(nowMs: number, limit: number): Promise<ItemHeader[]>;
  /** deletes one item (its dedup row stays as the tombstone) and releases its usage */
  deleteItem(targetPubkey: string, seq: number): Promise<void>;
  /**
   * One step of the dedup sweep: walks dedup rows in acceptance order from `limits.after` (0: the
   * first), at most `limits.maxWalk` of them, and deletes up to `limits.limit` accepted before
   * `beforeMs` whose item no longer exists. Rows whose item still exists, and rows stamped after
   * `nowMs` (a clock that ran ahead), are passed over; the walk ends at the first row accepted in
   * [beforeMs, nowMs].
   */
  sweepDedup(beforeMs: number, nowMs: number, limits: DedupSweepLimits): Promise<DedupSweepStep>;

  /**
   * Moves the old key's enrolment name/account, queue (re-sequenced in order after the new key's
   * items, seqs from max(next_seq, nowMs)), dedup rows (following their items), usage, and sender
   * allowlist to the new key; swaps the old key for the new in other targets' allowlists; revokes
   * the old key at `nowMs`. The caller has checked the record and that the new key is not revoked.
   */
  rotate(oldPubkey: string, newPubkey: string, nowMs: number): Promise<RotationResult>;
}

export interface TransactionOptions {
  /** a read-only transaction (pull, info, lookups) */
  readOnly?: boolean;
}

export interface RelayStore {
  /**
   * Runs `fn` inside one transaction. The promise resolves only after the transaction committed
   * durably (on disk: it survives a power cut); if `fn` throws, nothing it wrote remains and the error is rethrown.
   * Transactions run one at a time. A backend MAY commit several concurrent transactions together
   * (each inside its own savepoint, so each stays all-or-nothing); each still resolves only after
   * the shared commit.
   */
  transaction<T>(fn: (tx: RelayTx) => Promise<T>, options?: TransactionOptions): Promise<T>;
  close(): Promise<void>;
}
