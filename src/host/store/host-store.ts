// The host's store: one SQLite file shared by the CLI and the daemon. All of the host's SQL lives
// in this folder; everything else goes through these tables.
import { AgentMailTables } from './agent-mail-tables.ts';
import { openDatabase, schemaVersion, type Database } from './database.ts';
import { MailTables } from './mail-tables.ts';
import { OutboxTable } from './outbox-table.ts';
import { OverviewTables } from './overview-tables.ts';
import { PairTokensTable, RotationsTable } from './pairing-tables.ts';
import { PeerLinksTable } from './peer-links-table.ts';
import { PeersTable } from './peers-table.ts';
import { ReceiptsTable } from './receipts-table.ts';
import { RelayTables } from './relay-tables.ts';
import { WakeTables } from './wake-tables.ts';

/** Meta key holding the host public key this store belongs to (rotation updates it; a store without it holds no host). */
export const META_HOST_PUB = 'host_pubkey';
/** The URL the daemon listens on, written when it starts (peers' pair/join and doctor read it). */
export const META_LISTEN_ADDR = 'listen_addr';

export class HostStore {
  readonly db: Database;
  readonly peers: PeersTable;
  readonly mail: MailTables;
  readonly outbox: OutboxTable;
  readonly receipts: ReceiptsTable;
  readonly pairTokens: PairTokensTable;
  readonly rotations: RotationsTable;
  readonly relay: RelayTables;
  readonly agentMail: AgentMailTables;
  readonly peerLinks: PeerLinksTable;
  readonly wake: WakeTables;
  readonly overview: OverviewTables;

  constructor(db: Database) {
    this.db = db;
    this.peers = new PeersTable(db);
    this.mail = new MailTables(db);
    this.outbox = new OutboxTable(db);
    this.receipts = new ReceiptsTable(db);
    this.pairTokens = new PairTokensTable(db);
    this.rotations = new RotationsTable(db);
    this.relay = new RelayTables(db);
    this.agentMail = new AgentMailTables(db);
    this.peerLinks = new PeerLinksTable(db);
    this.wake = new WakeTables(db);
    this.overview = new OverviewTables(db);
  }

  static open(path: string): HostStore {
    return new HostStore(openDatabase(path));
  }

  /** A transaction; nested in another it is a savepoint (database.ts). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn);
  }

  /** Throws unless a transaction is open: for writes that must commit with their caller's. */
  assertTransaction(what: string): void {
    this.db.assertTransaction(what);
  }

  getMeta(key: string): string | undefined {
    return this.db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', key)?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value', key, value);
  }

  schemaVersion(): number {
    return schemaVersion(this.db);
  }

  /** SQLite's own integrity check ('ok' when healthy). */
  quickCheck(): string {
    return this.db
      .all<{ quick_check: string }>('PRAGMA quick_check')
      .map((r) => r.quick_check)
      .join('; ');
  }

  close(): void {
    this.db.close();
  }
}
