// The one door between the relay's rules (core) and its state (design §2). The core never sees
// SQL; a backend is a folder beside this file (sqlite/ first) and is opened by openRelayStore.
//
// The store is split by domain in the manner of Bluesky PDS's actor-store: each domain has a reader
// and a transactor that extends it. `RelayStore.read` hands out readers only, so a write inside a
// read does not compile. The rules that must not differ between backends (the dedup sweep, the
// rotation re-sequencing) live in rules/ over the primitives below; what must be atomic (seq
// allocation, usage charging) lives inside the primitives.
//
// The records the domains read and write are in records.ts (re-exported here).
import type { AccountReader, AccountTransactor } from './accounts.ts';
import type { StoreDiskError } from './errors.ts';
import type {
  DedupKey,
  DedupRow,
  DedupWalkRow,
  EncAd,
  Enrolment,
  ItemHeader,
  NewItem,
  OpsLogEntry,
  PullPage,
  QueueRef,
  QueueTotals,
  SenderList,
  SeqMove,
  StoreMeta,
  StoredOpsLogEntry,
  Usage,
} from './records.ts';
import type { ChallengeTransactor, RateWindowTransactor } from './shared-state.ts';

export { MAX_OPS_LOG_ENTRIES } from './records.ts';
export type * from './records.ts';

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
  /**
   * Moves items of `fromTarget` to seqs allocated for them in `toTarget`, moving their usage
   * charges with them; their dedup rows stay where they are. Refuses a move whose item is missing.
   */
  moveItems(fromTarget: string, toTarget: string, moves: readonly SeqMove[]): Promise<void>;
  /**
   * Re-points dedup rows of `fromTarget` to `toTarget`: the rows of `items` (each taking its new
   * seq), or, without `items`, every row left (keeping their seqs). A row `toTarget` already has for
   * the same sender and item id wins: the `fromTarget` row stays behind. Returns the rows moved.
   */
  repointDedup(fromTarget: string, toTarget: string, items?: ReadonlyArray<DedupKey & { seq: number }>): Promise<number>;
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

/**
 * How soon a read gets a connection where the store has few (PostgreSQL's pool): a held pull's
 * re-read after its item committed ('woken') first, then requests ('ordinary'), and a held pull's
 * own read ('held') last and on part of the connections only, so that thousands of hosts holding
 * their pulls never keep a push or a wake-up waiting. SQLite reads in arrival order.
 */
export type ReadPriority = 'woken' | 'ordinary' | 'held';

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
   * without waiting for writes. `fn` gets readers only. `priority` (default 'ordinary') orders reads
   * waiting for a connection where connections are few (ReadPriority).
   */
  read<T>(fn: (reader: RelayReader) => Promise<T>, priority?: ReadPriority): Promise<T>;
  /**
   * A read of one statement at most (`fn` asks one reader call of one statement, as every request's
   * caller lookup does), which is its own consistent snapshot: PostgreSQL runs it without
   * BEGIN/COMMIT, one round trip instead of two, and fails a second statement (a bug: use read).
   * SQLite: read.
   */
  lookup<T>(fn: (reader: RelayReader) => Promise<T>, priority?: ReadPriority): Promise<T>;
  /** the disk fault that refuses writes now, or null (for /healthz) */
  diskFault(): StoreDiskError | null;
  /**
   * Whether this process may run the heartbeat and the sweeps now: true in one process at a time of
   * all those serving the store. Asked at every housekeeping tick; a process that gets false stays a
   * standby and asks again at its next tick (it takes over once the holder has stopped or died).
   * SQLite: always true (its writer lock already lets one process, a group's primary, do them).
   */
  housekeeping(): Promise<boolean>;
  /**
   * Whether no other relay process serves the store now, so that a new epoch would leave nobody
   * serving the old one (the start-up check may rotate only then). SQLite: always true (the writer
   * lock file's holder is the only process that asks).
   */
  servesAlone(): Promise<boolean>;
  close(): Promise<void>;
}
