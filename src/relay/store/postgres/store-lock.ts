// A PostgreSQL relay process's store lock and its housekeeping lease: two session advisory locks on
// one connection of their own (outside the pool), which the server drops when that connection ends,
// so a process that dies frees both.
//
// The store lock, PostgreSQL's twin of the SQLite writer lock: every serving process holds it
// shared, an offline operation (rotate-epoch) exclusively, so neither runs beside the other. When
// its connection ends (a server restart, a terminated backend, an idle kill; a cut the socket does
// not report is found by the periodic check, which also reads the store's epoch: a process that
// finds it changed under it gives up as below), the lock is gone and an offline operation could
// start: the store then refuses every read and write (StoreLockLostError: HTTP 503 STORE_BUSY,
// /healthz unhealthy) and tries, at each check, to take the lock again on a new connection. Taken
// again, it serves again only if the store's epoch is still the one the process serves: a changed
// epoch means an offline operation (or another process's start-up check) ran in the gap, and the
// process keeps refusing until it is restarted.
//
// The housekeeping lease: one process of all those on the database runs the heartbeat and the
// sweeps (RelayStore.housekeeping). A process asks for it (pg_try_advisory_lock, never waiting)
// when a housekeeping tick comes, and keeps it until its connection ends: a standby takes it at its
// first tick after the holder closed or died.
import type pg from 'pg';
import { UNREF_TICKER, type Ticker } from '../../../common/ticker.ts';
import { StoreLockLostError, StoreOpenError } from '../errors.ts';
import { readMeta } from './meta.ts';
import { sqlOver } from './sql.ts';

/** How often a held lock's connection is checked, and a lost lock asked for again. */
export const STORE_LOCK_CHECK_INTERVAL_MS = 5_000;
/** A statement on the lock's connection not answered within this counts as a cut connection. */
export const STORE_LOCK_QUERY_TIMEOUT_MS = 10_000;

const STORE_LOCK = 'agentmbx-relay-store';
const HOUSEKEEPING_LEASE = 'agentmbx-relay-housekeeping';

export interface StoreLockOptions {
  /** a new connected client of the lock's own (open-store.ts) */
  connect: () => Promise<pg.Client>;
  /** the database, for messages (no password) */
  where: string;
  /** an offline operation's lock (exclusive) rather than a serving process's (shared) */
  exclusive: boolean;
  /** the epoch this process serves, or null before it has read one */
  servedEpoch?: () => string | null;
  /** told when the lock is lost (with the error requests now get) and when it is held again (null) */
  onLockState?: (lost: StoreLockLostError | null) => void;
  /** runs the periodic check (default every STORE_LOCK_CHECK_INTERVAL_MS, unref'd; tests fire it by hand) */
  checkTicker?: Ticker;
}

/** Takes the store lock (shared to serve, exclusive offline) on a connection of its own, or refuses. */
export async function takeStoreLock(options: StoreLockOptions): Promise<StoreLock> {
  const client = await options.connect();
  if (await tryLock(client, storeLockFunction(options.exclusive), STORE_LOCK)) return new StoreLock(client, options);
  await client.end();
  throw new StoreOpenError(
    options.exclusive
      ? `a relay process is serving the store at ${options.where}: stop every relay process using it first`
      : `an offline operation (rotate-epoch, restore) holds the store at ${options.where}: wait for it to finish`,
  );
}

export class StoreLock {
  readonly #options: StoreLockOptions;
  /** the connection holding the lock; null while it is lost, and once ended */
  #client: pg.Client | null = null;
  #lost: StoreLockLostError | null = null;
  /** the store changed while the lock was lost: never taken again */
  #givenUp = false;
  #ended = false;
  #leaseHeld = false;
  #leaseAsked: Promise<boolean> | null = null;
  #checking: Promise<void> | null = null;
  readonly #stopChecks: () => void;

  constructor(client: pg.Client, options: StoreLockOptions) {
    this.#options = options;
    this.#hold(client);
    this.#stopChecks = (options.checkTicker ?? UNREF_TICKER)(() => {
      void this.#check();
    }, STORE_LOCK_CHECK_INTERVAL_MS);
  }

  /** The error every read and write gets while the lock is lost, or null. */
  refusal(): StoreLockLostError | null {
    return this.#lost;
  }

  /** Whether this process holds the housekeeping lease (asking for it when it does not). */
  housekeeping(): Promise<boolean> {
    const client = this.#client;
    if (client === null) return Promise.resolve(false);
    if (this.#leaseHeld) return Promise.resolve(true);
    // one question at a time: asked twice, the server would count the lease twice
    this.#leaseAsked ??= this.#askLease(client).finally(() => {
      this.#leaseAsked = null;
    });
    return this.#leaseAsked;
  }

  /**
   * Whether no other session holds the store lock: the exclusive lock is free to this connection,
   * whose own shared hold never conflicts with it. It is given back at once (the shared hold stays),
   * so a process starting meanwhile is not refused: it starts as a standby.
   */
  async alone(): Promise<boolean> {
    const client = this.#client;
    if (client === null) return false;
    try {
      if (!(await tryLock(client, 'pg_try_advisory_lock', STORE_LOCK))) return false;
      await client.query('SELECT pg_advisory_unlock(hashtextextended($1, 0))', [STORE_LOCK]);
      return true;
    } catch (error) {
      this.#lose(client, error);
      return false;
    }
  }

  /** Stops the checks and ends the connection: the server drops the lock and the lease. */
  async end(): Promise<void> {
    this.#ended = true;
    this.#stopChecks();
    await this.#checking;
    const client = this.#client;
    this.#client = null;
    await client?.end();
  }

  async #askLease(client: pg.Client): Promise<boolean> {
    try {
      const taken = await tryLock(client, 'pg_try_advisory_lock', HOUSEKEEPING_LEASE);
      // a lease on a connection lost meanwhile is no lease
      this.#leaseHeld = taken && this.#client === client;
      return this.#leaseHeld;
    } catch (error) {
      this.#lose(client, error);
      return false;
    }
  }

  #check(): Promise<void> {
    if (this.#ended || this.#givenUp) return Promise.resolve();
    const client = this.#client;
    this.#checking ??= (client === null ? this.#retake() : this.#ping(client)).finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  /** The connection still answers, and the store still has the epoch this process serves (another process's rotation would leave it serving an old one). */
  async #ping(client: pg.Client): Promise<void> {
    const { where } = this.#options;
    let epoch: string;
    try {
      epoch = (await readMeta(sqlOver(client), where)).epoch;
    } catch (error) {
      this.#lose(client, error);
      return;
    }
    const served = this.#options.servedEpoch?.() ?? null;
    if (served === null || epoch === served || this.#ended) return;
    this.#let(client);
    this.#giveUp(`the epoch of the store at ${where} changed while this process served it (another process rotated it): restart it`);
  }

  #hold(client: pg.Client): void {
    client.on('error', (error) => this.#lose(client, error));
    client.on('end', () => this.#lose(client, new Error('its connection ended')));
    this.#client = client;
  }

  #lose(client: pg.Client, error: unknown): void {
    if (this.#client !== client || this.#ended) return;
    this.#let(client);
    const reason = error instanceof Error ? error.message : String(error);
    this.#lost = new StoreLockLostError(
      `this process lost its lock on the store at ${this.#options.where} (${reason}): it refuses requests until it holds the lock again`,
    );
    this.#options.onLockState?.(this.#lost);
  }

  /** Lets go of the held connection: the server drops the lock and the lease with it. */
  #let(client: pg.Client): void {
    this.#client = null;
    this.#leaseHeld = false;
    client.end().catch(() => {});
  }

  /** Asks for the lock on a new connection; held again only if the store still has the epoch this process serves. */
  async #retake(): Promise<void> {
    const { where } = this.#options;
    let client: pg.Client;
    try {
      client = await this.#options.connect();
    } catch {
      return; // the database is still out of reach: the next check asks again
    }
    try {
      const taken = await tryLock(client, storeLockFunction(this.#options.exclusive), STORE_LOCK);
      const served = this.#options.servedEpoch?.() ?? null;
      const changed = taken && served !== null && (await readMeta(sqlOver(client), where)).epoch !== served;
      if (!taken || changed || this.#ended) {
        await client.end();
        if (changed)
          this.#giveUp(`the epoch of the store at ${where} changed while this process had lost its lock (an offline operation ran meanwhile): restart it`);
        return;
      }
      this.#hold(client);
      this.#lost = null;
      this.#options.onLockState?.(null);
    } catch {
      await client.end().catch(() => {});
    }
  }

  #giveUp(message: string): void {
    this.#givenUp = true;
    this.#stopChecks();
    this.#lost = new StoreLockLostError(message);
    this.#options.onLockState?.(this.#lost);
  }
}

function storeLockFunction(exclusive: boolean): string {
  return exclusive ? 'pg_try_advisory_lock' : 'pg_try_advisory_lock_shared';
}

async function tryLock(client: pg.Client, take: string, name: string): Promise<boolean> {
  const { rows } = await client.query(`SELECT ${take}(hashtextextended($1, 0)) AS taken`, [name]);
  return rows[0]?.taken === true;
}
