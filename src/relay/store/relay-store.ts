// The one door between the relay's rules (core) and its state (design §2). The core never sees
// SQL; a backend is a folder beside this file (sqlite/ first) and is opened by openRelayStore.
//
// The store is split by domain in the manner of Bluesky PDS's actor-store: each domain has a reader
// and a transactor that extends it. `RelayStore.read` hands out readers only, so a write inside a
// read does not compile. The rules that must not differ between backends (the dedup sweep, the
// rotation re-sequencing) live in rules/ over the primitives below; what must be atomic (seq
// allocation, usage charging) lives inside the primitives.
//
// Times are Unix milliseconds (numbers) throughout; the core turns them into ISO strings on the wire.
import type { AccountReader, AccountTransactor } from './accounts.ts';
import type { StoreDiskError } from './errors.ts';
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

/** Entries of the operations log kept; appending beyond it drops the oldest (an operator log, not an audit archive). */
export const MAX_OPS_LOG_ENTRIES = 10_000;

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


/** A dedup row as the sweep walks it: its place in acceptance order, when, and whether its item is still queued. */
export interface DedupWalkRow {
  /** increasing in acceptance order; opaque otherwise (a cursor for the next walk) */
  id: number;
  acceptedAt: number;
  /** whether the item the row names still exists */
  live: boolean;
}

/** An item of a queue as rotation moves it. */
export interface QueueRef {
  seq: number;
  itemId: string;
  senderPubkey: string;
}

/** Where an item sits: its target's queue and its seq there. */
export interface ItemPlace {
  targetPubkey: string;
  seq: number;
}

/** Names one dedup row of a target: who sent which item. */
export interface DedupKey {
  senderPubkey: string;
  itemId: string;
}

export interface QueueTotals {
  /** items queued for all hosts */
  items: number;
  /** acceptance time of the item nearest expiry, or null when none is queued */
  oldestAcceptedAt: number | null;
}

export interface MetaReader {
  get(): Promise<StoreMeta>;
  /** the newest `limit` entries of the operations log, newest first */
  opsLog(limit: number): Promise<StoredOpsLogEntry[]>;
}

export interface MetaTransactor extends MetaReader {
  setEpoch(epoch: string): Promise<void>;
  writeHeartbeat(atMs: number): Promise<void>;
  /** appends to the operations log (the oldest entries beyond its cap are dropped) */
  appendOpsLog(entry: OpsLogEntry): Promise<void>;
}

export interface EnrolmentReader {
  get(hostPubkey: string): Promise<Enrolment | null>;
  /** live (not revoked) enrolments whose name matches case-insensitively, at most `limit` */
  liveByName(hostName: string, limit: number): Promise<Enrolment[]>;
  /** whether another live key carries this name (case-insensitively) inside `account` */
  nameTakenInAccount(account: string, hostName: string, exceptPubkey: string): Promise<boolean>;
  countLive(): Promise<number>;
}

export interface EnrolmentTransactor extends EnrolmentReader {
  /** inserts or replaces the row for `enrolment.hostPubkey` (the core decides what may change) */
  put(enrolment: Enrolment): Promise<void>;
}

/** What a host publishes about itself: its enc-key ad and its sender allowlist. */
export interface HostRecordReader {
  encAd(hostPubkey: string): Promise<EncAd | null>;
  senderList(targetPubkey: string): Promise<SenderList | null>;
  /** every allowlist that names `senderPubkey` (rotation swaps the key in them) */
  senderListsNaming(senderPubkey: string): Promise<SenderList[]>;
}

export interface HostRecordTransactor extends HostRecordReader {
  putEncAd(ad: EncAd): Promise<void>;
  /** inserts or replaces the target's list */
  putSenderList(list: SenderList): Promise<void>;
  /** the `from` key's list becomes the `to` key's, unless `to` has its own (then both stay as they are) */
  moveSenderList(fromPubkey: string, toPubkey: string): Promise<void>;
}

export interface ItemReader {
  dedup(senderPubkey: string, itemId: string, targetPubkey: string): Promise<DedupRow | null>;
  /** items with seq > after in seq order: at most `limit`, stopping before `maxBytes` but never empty when items remain */
  pull(targetPubkey: string, after: number, limit: number, maxBytes: number): Promise<PullPage>;
  /** highest seq allocated for the target, 0 if none */
  headSeq(targetPubkey: string): Promise<number>;
  ackedThrough(targetPubkey: string): Promise<number>;
  /** items whose expires_at ≤ nowMs, oldest expiry first, at most `limit` */
  expired(nowMs: number, limit: number): Promise<ItemHeader[]>;
  /** up to `limit` dedup rows with id > `after`, in acceptance order (the order they were inserted) */
  dedupWalk(after: number, limit: number): Promise<DedupWalkRow[]>;
  /** the target's whole queue in seq order (rotation; a queue is bounded by its quota) */
  queueRefs(targetPubkey: string): Promise<QueueRef[]>;
  /** totals over every queue (metrics) */
  queueTotals(): Promise<QueueTotals>;
}

export interface ItemTransactor extends ItemReader {
  /**
   * Allocates the next seq for the target — max(next_seq, nowMs), never reused — and inserts the
   * item and its dedup row (a row for the same sender, item id and target must not exist), charging
   * the usage counters. Returns the seq.
   */
  insert(item: NewItem, nowMs: number): Promise<number>;
  /** deletes the target's items with seq ≤ through, releasing their usage; acked_through = max(old, through). Returns the count deleted. */
  ack(targetPubkey: string, through: number): Promise<number>;
  /** deletes one item (its dedup row stays as the tombstone) and releases its usage */
  delete(targetPubkey: string, seq: number): Promise<void>;
  /** deletes the dedup rows with these ids whose item no longer exists (a live item's row is kept); returns how many */
  deleteDedupRows(ids: readonly number[]): Promise<number>;
  /** allocates `count` consecutive seqs for the target from max(next_seq, nowMs), never reused; returns the first */
  allocateSeqs(targetPubkey: string, count: number, nowMs: number): Promise<number>;
  /** moves one item to a place allocated for it, moving its usage charge with it; its dedup row stays where it is */
  moveItem(from: ItemPlace, to: ItemPlace): Promise<void>;
  /**
   * Re-points dedup rows of `fromTarget` to `toTarget`: the one row of `item` (taking its new seq),
   * or, without `item`, every row left (keeping their seqs). A row `toTarget` already has for the
   * same sender and item id wins: the `fromTarget` row stays behind. Returns the rows moved.
   */
  repointDedup(fromTarget: string, toTarget: string, item?: DedupKey & { seq: number }): Promise<number>;
  /** deletes the target's dedup rows whose item no longer exists; returns how many */
  deleteTombstonesOf(targetPubkey: string): Promise<number>;
}

export interface UsageReader {
  queue(targetPubkey: string): Promise<Usage>;
  sender(senderPubkey: string, targetPubkey: string): Promise<Usage>;
  account(account: string): Promise<Usage>;
}

/** Usage changes only with the items it counts: the item primitives charge and release it. */
export type UsageTransactor = UsageReader;

/** What a read may use: every domain's reader. */
export interface RelayReader {
  meta: MetaReader;
  enrolments: EnrolmentReader;
  hostRecords: HostRecordReader;
  items: ItemReader;
  usage: UsageReader;
  accounts: AccountReader;
}

/** What a transaction may use: every domain's transactor. Refuses every call once its transaction ended. */
export interface RelayTransactor {
  meta: MetaTransactor;
  enrolments: EnrolmentTransactor;
  hostRecords: HostRecordTransactor;
  items: ItemTransactor;
  usage: UsageTransactor;
  accounts: AccountTransactor;
  /** enrolment challenges shared by a relay's processes (shared-state.ts) */
  challenges: ChallengeTransactor;
  /** request windows shared by a relay's processes (shared-state.ts) */
  rateWindows: RateWindowTransactor;
}

export interface RelayStore {
  /**
   * Runs `fn` inside one transaction. The promise resolves only after the transaction committed
   * durably (on disk: it survives a power cut); if `fn` throws, nothing it wrote remains and the error is rethrown.
   * Transactions run one at a time. A backend MAY commit several concurrent transactions together
   * (each inside its own savepoint, so each stays all-or-nothing); each still resolves only after
   * the shared commit.
   */
  transaction<T>(fn: (tx: RelayTransactor) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` over one consistent snapshot of what has committed (never what a transaction has not),
   * without waiting for writes. `fn` gets readers only.
   */
  read<T>(fn: (reader: RelayReader) => Promise<T>): Promise<T>;
  /** the disk fault that refuses writes now, or null (for /healthz) */
  diskFault(): StoreDiskError | null;
  close(): Promise<void>;
}
