// The host's relay state: the pinned relay and its session facts, the receive position per
// (relay, epoch), quarantined items, and the newest peer enc-ads seen through the relay.
import type { Database } from './database.ts';

/** Where relay use stands; anything but ok (and new) is shown by doctor. */
export const RELAY_STATES = ['new', 'ok', 'unreachable', 'key-mismatch', 'enrol-failed', 'enc-ad-failed', 'clock-skew', 'token-failed', 'denied'] as const;
export type RelayState = (typeof RELAY_STATES)[number];

export interface RelayRow {
  url: string;
  relay_pubkey: string;
  seen_pubkey: string | null;
  state: RelayState;
  detail: string | null;
  epoch: string | null;
  epoch_changed_at: number | null;
  retention_ms: number | null;
  max_batch: number | null;
  max_pull: number | null;
  /** the relay's max_item_bytes (null: not known yet) */
  max_item_bytes: number | null;
  session: string | null;
  session_host_pubkey: string | null;
  enc_ad_at: number | null;
  enc_ad_pub: string | null;
  /** 1 when the relay takes only v1 enc-key ads (it predates signed v2 ads), else 0 */
  enc_ad_v1_only: number;
  senders_published: string | null;
  failures: number;
  retry_at: number;
  set_at: number;
  /** the command printing an account token for a hosted relay (null: none) */
  token_command: string | null;
}

export type RelayUpdate = Partial<Omit<RelayRow, 'url' | 'set_at' | 'token_command'>>;

export interface QuarantineRow {
  relay_url: string;
  epoch: string;
  seq: number;
  kind: string;
  item_id: string;
  sender_pubkey: string;
  reason: string;
  wire_b64: string;
  at: number;
  /** when the owner dismissed it (it stays, but doctor no longer counts it); null while it is not */
  dismissed_at?: number | null;
}

export interface PeerEncAdRow {
  host_pubkey: string;
  enc_pub: string;
  iat_ms: number;
  record: string;
}

/** Most quarantined items one listing returns. */
export const QUARANTINE_LIST_MAX = 1000;

const UPDATABLE = new Set([
  'relay_pubkey',
  'seen_pubkey',
  'state',
  'detail',
  'epoch',
  'epoch_changed_at',
  'retention_ms',
  'max_batch',
  'max_pull',
  'max_item_bytes',
  'session',
  'session_host_pubkey',
  'enc_ad_at',
  'enc_ad_pub',
  'enc_ad_v1_only',
  'senders_published',
  'failures',
  'retry_at',
]);

export class RelayTables {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  get(): RelayRow | undefined {
    return this.#db.get<RelayRow>('SELECT * FROM relay WHERE id = 1');
  }

  /** Pins a relay (replacing any other); its session starts over. The same URL keeps its token command; another starts without. */
  pin(url: string, relayPubkey: string, nowMs: number): void {
    this.#db.run(
      `INSERT INTO relay (id, url, relay_pubkey, state, set_at) VALUES (1, ?, ?, 'new', ?)
       ON CONFLICT (id) DO UPDATE SET url = excluded.url, relay_pubkey = excluded.relay_pubkey, seen_pubkey = NULL, state = 'new',
         detail = NULL, session = NULL, enc_ad_at = NULL, enc_ad_pub = NULL, enc_ad_v1_only = 0, senders_published = NULL, failures = 0, retry_at = 0,
         set_at = excluded.set_at, token_command = CASE WHEN relay.url = excluded.url THEN relay.token_command END`,
      url,
      relayPubkey,
      nowMs,
    );
  }

  /** Sets (or with null removes) the token command; a changed command drops the session (enrol again) and any backoff. */
  setTokenCommand(command: string | null): void {
    this.#db.run(
      `UPDATE relay SET token_command = ?, session = NULL, state = 'new', detail = NULL, failures = 0, retry_at = 0
       WHERE id = 1 AND token_command IS NOT ?`,
      command,
      command,
    );
  }

  unset(): boolean {
    return this.#db.run('DELETE FROM relay WHERE id = 1').changes > 0;
  }

  update(fields: RelayUpdate): void {
    const entries = Object.entries(fields).filter(([k, v]) => UPDATABLE.has(k) && v !== undefined);
    if (entries.length === 0) return;
    this.#db.run(`UPDATE relay SET ${entries.map(([k]) => `${k} = ?`).join(', ')} WHERE id = 1`, ...entries.map(([, v]) => v as string | number | null));
  }

  receivedThrough(url: string, epoch: string): number {
    return (
      this.#db.get<{ received_through: number }>('SELECT received_through FROM relay_position WHERE relay_url = ? AND epoch = ?', url, epoch)
        ?.received_through ?? 0
    );
  }

  setReceivedThrough(url: string, epoch: string, through: number, nowMs: number): void {
    this.#db.run(
      `INSERT INTO relay_position (relay_url, epoch, received_through, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (relay_url, epoch) DO UPDATE SET received_through = excluded.received_through, updated_at = excluded.updated_at`,
      url,
      epoch,
      through,
      nowMs,
    );
  }

  quarantine(row: QuarantineRow): void {
    this.#db.run(
      `INSERT OR IGNORE INTO relay_quarantine (relay_url, epoch, seq, kind, item_id, sender_pubkey, reason, wire_b64, at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      row.relay_url,
      row.epoch,
      row.seq,
      row.kind,
      row.item_id,
      row.sender_pubkey,
      row.reason,
      row.wire_b64,
      row.at,
    );
  }

  /** Quarantined items, oldest first; dismissed ones only with `withDismissed`. */
  quarantined(limit = QUARANTINE_LIST_MAX, withDismissed = true): QuarantineRow[] {
    return this.#db.all<QuarantineRow>(
      'SELECT * FROM relay_quarantine WHERE (? OR dismissed_at IS NULL) ORDER BY at, seq LIMIT ?',
      withDismissed ? 1 : 0,
      limit,
    );
  }

  /** The quarantined items with relay seq `seq` (one per relay and epoch). */
  quarantinedAt(seq: number): QuarantineRow[] {
    return this.#db.all<QuarantineRow>('SELECT * FROM relay_quarantine WHERE seq = ? ORDER BY at', seq);
  }

  /** Marks an item dismissed (kept in the store); false when it was already. */
  dismissQuarantined(row: Pick<QuarantineRow, 'relay_url' | 'epoch' | 'seq'>, nowMs: number): boolean {
    return (
      this.#db.run(
        'UPDATE relay_quarantine SET dismissed_at = ? WHERE relay_url = ? AND epoch = ? AND seq = ? AND dismissed_at IS NULL',
        nowMs,
        row.relay_url,
        row.epoch,
        row.seq,
      ).changes > 0
    );
  }

  /** Quarantined items pushed by `senderPubkey`, oldest first. */
  quarantinedFrom(senderPubkey: string, limit = QUARANTINE_LIST_MAX): QuarantineRow[] {
    return this.#db.all<QuarantineRow>('SELECT * FROM relay_quarantine WHERE sender_pubkey = ? ORDER BY at, seq LIMIT ?', senderPubkey, limit);
  }

  /** Takes the item out of the quarantine; false when it was not there. */
  release(row: Pick<QuarantineRow, 'relay_url' | 'epoch' | 'seq'>): boolean {
    return this.#db.run('DELETE FROM relay_quarantine WHERE relay_url = ? AND epoch = ? AND seq = ?', row.relay_url, row.epoch, row.seq).changes > 0;
  }

  /** Quarantined items the owner has not dismissed. */
  quarantineCount(): number {
    return this.#db.get<{ n: number }>('SELECT COUNT(*) AS n FROM relay_quarantine WHERE dismissed_at IS NULL')?.n ?? 0;
  }

  peerEncAd(hostPubkey: string): PeerEncAdRow | undefined {
    return this.#db.get<PeerEncAdRow>('SELECT * FROM relay_enc_ads WHERE host_pubkey = ?', hostPubkey);
  }

  putPeerEncAd(row: PeerEncAdRow): void {
    this.#db.run(
      `INSERT INTO relay_enc_ads (host_pubkey, enc_pub, iat_ms, record) VALUES (?, ?, ?, ?)
       ON CONFLICT (host_pubkey) DO UPDATE SET enc_pub = excluded.enc_pub, iat_ms = excluded.iat_ms, record = excluded.record`,
      row.host_pubkey,
      row.enc_pub,
      row.iat_ms,
      row.record,
    );
  }
}
