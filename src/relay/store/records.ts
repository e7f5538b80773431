// What the relay store holds, as the core and every backend see it (design §2). Times are Unix
// milliseconds (numbers) throughout; the core turns them into ISO strings on the wire.

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
  /**
   * On a v2 row: the signature of the host's legacy v1 ad `{v:1, host, enc_pub}` naming the same enc
   * key (AgentMBX hosts publish both, protocol.md §3.8), or null. Always null on a v1 row (`sig` is it).
   */
  v1Sig: string | null;
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

/** One item's move in a rotation: its seq in the old queue and the seq allocated for it in the new. */
export interface SeqMove {
  from: number;
  to: number;
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
