// Paired hosts and the keys they retired.
import type { Database } from './database.ts';

export interface PeerRow {
  host: string;
  host_pubkey: string;
  owner_pubkey: string | null;
  addr: string;
  enc_pub: string | null;
  enc_sig: string | null;
  paired_at: number;
  last_ok_at: number | null;
  last_error: string | null;
  lan_error_at: number | null;
  /** a LAN delivery attempt started then and has not ended (set before the call, cleared after) */
  lan_attempt_at: number | null;
}

/** What pairing knows of a new peer. */
export type NewPeer = Pick<PeerRow, 'host' | 'host_pubkey' | 'owner_pubkey' | 'addr' | 'enc_pub' | 'enc_sig'>;

export class PeersTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * Pins a peer. A re-pairing replaces the earlier pin of that name or key, and forgets the keys
   * the earlier pin had retired: they belonged to an identity the owner just replaced.
   */
  pin(peer: NewPeer, nowMs: number): void {
    this.#db.transaction(() => {
      this.#db.run('DELETE FROM peer_retired_keys WHERE host = ? OR host IN (SELECT host FROM peers WHERE host_pubkey = ?)', peer.host, peer.host_pubkey);
      this.#db.run('DELETE FROM peers WHERE host = ? OR host_pubkey = ?', peer.host, peer.host_pubkey);
      this.#db.run(
        `INSERT INTO peers (host, host_pubkey, owner_pubkey, addr, enc_pub, enc_sig, paired_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        peer.host,
        peer.host_pubkey,
        peer.owner_pubkey,
        peer.addr,
        peer.enc_pub,
        peer.enc_sig,
        nowMs,
      );
    });
  }

  get(host: string): PeerRow | undefined {
    return this.#db.get<PeerRow>('SELECT * FROM peers WHERE host = ?', host);
  }

  /** The peer whose current or retired host key is `pubkey`. */
  byKey(pubkey: string): PeerRow | undefined {
    return (
      this.#db.get<PeerRow>('SELECT * FROM peers WHERE host_pubkey = ?', pubkey) ??
      this.#db.get<PeerRow>('SELECT p.* FROM peers p JOIN peer_retired_keys r ON r.host = p.host WHERE r.pubkey = ?', pubkey)
    );
  }

  list(): PeerRow[] {
    return this.#db.all<PeerRow>('SELECT * FROM peers ORDER BY host');
  }

  remove(host: string): boolean {
    return this.#db.transaction(() => {
      this.#db.run('DELETE FROM peer_retired_keys WHERE host = ?', host);
      return this.#db.run('DELETE FROM peers WHERE host = ?', host).changes > 0;
    });
  }

  setEncKey(host: string, encPub: string, sig: string): void {
    this.#db.run('UPDATE peers SET enc_pub = ?, enc_sig = ? WHERE host = ?', encPub, sig, host);
  }

  noteReachable(host: string, nowMs: number): void {
    this.#db.run('UPDATE peers SET last_ok_at = ?, last_error = NULL WHERE host = ?', nowMs, host);
  }

  /** A LAN delivery attempt to `host` starts now (written before the call, so a crash inside it is known). */
  noteAttempt(host: string, nowMs: number): void {
    this.#db.run('UPDATE peers SET lan_attempt_at = ? WHERE host = ?', nowMs, host);
  }

  /** The LAN delivery attempt ended with an answer (its outcome is recorded by noteReachable or noteError). */
  endAttempt(host: string): void {
    this.#db.run('UPDATE peers SET lan_attempt_at = NULL WHERE host = ?', host);
  }

  /** Records a failed LAN call (`nowMs` given: the peer's address is then known unreachable, and the attempt ended). */
  noteError(host: string, error: string, nowMs?: number): void {
    if (nowMs === undefined) this.#db.run('UPDATE peers SET last_error = ? WHERE host = ?', error, host);
    else this.#db.run('UPDATE peers SET last_error = ?, lan_error_at = ?, lan_attempt_at = NULL WHERE host = ?', error, nowMs, host);
  }

  /**
   * LAN attempts a stopped daemon left unfinished count as failed at the time they started: the next
   * daemon sends those peers' rows to the relay instead of trying the same silent path again.
   * Returns the hosts concerned.
   */
  failInterruptedAttempts(): string[] {
    // Nothing is written when nothing is open (a daemon on a full disk still starts).
    const hosts = this.#db.all<{ host: string }>('SELECT host FROM peers WHERE lan_attempt_at IS NOT NULL ORDER BY host').map((r) => r.host);
    if (hosts.length > 0) {
      this.#db.run(`UPDATE peers SET lan_error_at = lan_attempt_at, lan_attempt_at = NULL,
        last_error = 'a LAN attempt was cut short when the daemon stopped' WHERE lan_attempt_at IS NOT NULL`);
    }
    return hosts;
  }

  /** Applies a peer's rotation: the new keys become pinned, the old host key is kept as retired. */
  rotate(host: string, oldPub: string, newPub: string, newEncPub: string, nowMs: number): void {
    this.#db.transaction(() => {
      this.#db.run('INSERT OR IGNORE INTO peer_retired_keys (pubkey, host, retired_at) VALUES (?, ?, ?)', oldPub, host, nowMs);
      this.#db.run('UPDATE peers SET host_pubkey = ?, enc_pub = ?, enc_sig = NULL WHERE host = ?', newPub, newEncPub, host);
    });
  }

  retiredKeys(host: string): string[] {
    return this.#db.all<{ pubkey: string }>('SELECT pubkey FROM peer_retired_keys WHERE host = ? ORDER BY retired_at DESC', host).map((r) => r.pubkey);
  }
}
