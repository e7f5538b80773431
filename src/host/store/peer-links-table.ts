// What this host learns about its peers beyond their keys (schema 6): their directories (agents),
// the features their status names, directory mail we sent them, their presence beacons and the
// addresses their calls come from. Rows of hosts that are no longer peers are never read (every
// read joins the peers table) and are dropped by prune().
import type { Database } from './database.ts';

/** One agent of a peer as its directory lists it. */
export interface PeerAgentRow {
  host: string;
  name: string;
  role: string | null;
  cli: string | null;
  description: string | null;
  last_seen: string | null;
}

export type NewPeerAgent = Omit<PeerAgentRow, 'host'>;

export interface PeerLinkRow {
  host: string;
  /** JSON array of strings, or null while unknown */
  features: string | null;
  status_at: number | null;
  directory_at: number | null;
  directory_seq: number;
  served_at: number | null;
  mail_digest: string | null;
  mail_at: number | null;
  presence_seq: number;
  /** JSON array of candidate base URLs from the last beacon */
  presence_addrs: string | null;
  presence_at: number | null;
  call_addr: string | null;
  call_at: number | null;
}

/** This host's agent with what the directory shows of it. */
export interface OwnAgentRow {
  name: string;
  role: string | null;
  cli: string | null;
  description: string | null;
}

export class PeerLinksTable {
  readonly #db: Database;
  constructor(db: Database) {
    this.#db = db;
  }

  #ensure(host: string): void {
    this.#db.run('INSERT INTO peer_links (host) VALUES (?) ON CONFLICT (host) DO NOTHING', host);
  }

  get(host: string): PeerLinkRow | undefined {
    return this.#db.get<PeerLinkRow>('SELECT l.* FROM peer_links l JOIN peers p ON p.host = l.host WHERE l.host = ?', host);
  }

  /** This host's agents, by name, at most `limit`. */
  ownAgents(limit: number): OwnAgentRow[] {
    return this.#db.all<OwnAgentRow>('SELECT name, role, cli, description FROM agents ORDER BY name LIMIT ?', limit);
  }

  setAgentCli(name: string, cli: string | null): void {
    this.#db.run('UPDATE agents SET cli = ? WHERE name = ?', cli, name);
  }

  /** Agents of current peers, by host then name, at most `limit`. */
  peerAgents(limit: number): PeerAgentRow[] {
    return this.#db.all<PeerAgentRow>('SELECT a.* FROM peer_agents a JOIN peers p ON p.host = a.host ORDER BY a.host, a.name LIMIT ?', limit);
  }

  /** The directory `host` last listed, by name. */
  peerAgentsOf(host: string): PeerAgentRow[] {
    return this.#db.all<PeerAgentRow>('SELECT * FROM peer_agents WHERE host = ? ORDER BY name', host);
  }

  /** Replaces the whole directory of `host` (and, for directory mail, records its seq). */
  replaceAgents(host: string, agents: readonly NewPeerAgent[], nowMs: number, seq?: number): void {
    this.#db.transaction(() => {
      this.#ensure(host);
      this.#db.run('DELETE FROM peer_agents WHERE host = ?', host);
      for (const a of agents) {
        this.#db.run(
          'INSERT OR REPLACE INTO peer_agents (host, name, role, cli, description, last_seen) VALUES (?, ?, ?, ?, ?, ?)',
          host,
          a.name,
          a.role,
          a.cli,
          a.description,
          a.last_seen,
        );
      }
      this.#db.run('UPDATE peer_links SET directory_at = ? WHERE host = ?', nowMs, host);
      if (seq !== undefined) this.#db.run('UPDATE peer_links SET directory_seq = ? WHERE host = ?', seq, host);
    });
  }

  setFeatures(host: string, features: readonly string[], nowMs: number): void {
    this.#ensure(host);
    this.#db.run('UPDATE peer_links SET features = ?, status_at = ? WHERE host = ?', JSON.stringify(features), nowMs, host);
  }

  /** The peer fetched our directory over the LAN. */
  noteServed(host: string, nowMs: number): void {
    this.#ensure(host);
    this.#db.run('UPDATE peer_links SET served_at = ? WHERE host = ?', nowMs, host);
  }

  noteMailSent(host: string, digest: string, nowMs: number): void {
    this.#ensure(host);
    this.#db.run('UPDATE peer_links SET mail_digest = ?, mail_at = ? WHERE host = ?', digest, nowMs, host);
  }

  /** Keeps a beacon when its seq is above the last one's; returns whether it was kept. */
  notePresence(host: string, seq: number, addrs: readonly string[], nowMs: number): boolean {
    return this.#db.transaction(() => {
      this.#ensure(host);
      return (
        this.#db.run(
          'UPDATE peer_links SET presence_seq = ?, presence_addrs = ?, presence_at = ? WHERE host = ? AND presence_seq < ?',
          seq,
          JSON.stringify(addrs),
          nowMs,
          host,
          seq,
        ).changes > 0
      );
    });
  }

  /** The address a verified call of the peer came from (its socket address and x-mbx-port). */
  noteCallAddr(host: string, addr: string, nowMs: number): void {
    this.#ensure(host);
    this.#db.run('UPDATE peer_links SET call_addr = ?, call_at = ? WHERE host = ?', addr, nowMs, host);
  }

  /** Moves the pin of a peer's address (after it proved its key there). */
  moveAddr(host: string, addr: string): void {
    this.#db.run('UPDATE peers SET addr = ?, last_error = NULL, lan_error_at = NULL WHERE host = ?', addr, host);
  }

  /** Drops what we kept about hosts that are no longer peers; returns how many hosts. */
  prune(): number {
    return this.#db.transaction(() => {
      this.#db.run('DELETE FROM peer_agents WHERE host NOT IN (SELECT host FROM peers)');
      return this.#db.run('DELETE FROM peer_links WHERE host NOT IN (SELECT host FROM peers)').changes;
    });
  }
}
