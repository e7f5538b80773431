// Held pulls across relay processes on one PostgreSQL database (docs/postgres.md "Held pulls"): a
// process that committed items for some target keys sends their keys with NOTIFY, and every process
// LISTENs on a connection of its own (outside the pool) and wakes its held pulls for them. The
// server delivers a notification to every listener once the NOTIFY's own transaction commits, and
// only then; it is sent after the items' commit, so a woken pull always finds them.
//
// While the connection is down (a server restart, a cut), notifications are missed: when it is back
// the process re-reads every held pull once (`onReconnect`), so a pull is at worst answered late,
// never left holding an item it should have been given until its wait ends.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { connectedClient } from './open-store.ts';
import { describeStoreUrl } from '../store-url.ts';

/** The channel the relay's processes NOTIFY and LISTEN on. */
export const ITEM_WAKE_CHANNEL = 'agentmbx_relay_items';
/** Keys per NOTIFY: a payload must stay under PostgreSQL's 8,000 bytes (a key is 44 characters, plus a comma). */
export const WAKE_KEYS_PER_NOTIFY = 150;
/** How long the listener waits before connecting again after its connection ended. */
export const WAKE_RECONNECT_MS = 1_000;

export interface PostgresItemWakes {
  /** tells every other process (after the commit that queued the items) */
  notify(keys: readonly string[]): void;
  close(): Promise<void>;
}

export interface PostgresItemWakesOptions {
  url: string;
  /** keys another process committed items for */
  onKeys: (keys: string[]) => void;
  /** the listener connected again after a loss: notifications may have been missed meanwhile */
  onReconnect: () => void;
  log: (line: string) => void;
}

export async function listenForItemWakes(options: PostgresItemWakesOptions): Promise<PostgresItemWakes> {
  const where = describeStoreUrl(options.url);
  // our own notifications come back to us too: the tag tells them apart (our held pulls were woken already)
  const tag = randomBytes(6).toString('base64url');
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;
  let lossLogged = false;

  const connect = async (): Promise<pg.Client> => {
    const next = await connectedClient(options.url, where, { application_name: 'agentmbx-relay-wakes', keepAlive: true });
    next.on('notification', (message) => {
      const payload = message.payload ?? '';
      const space = payload.indexOf(' ');
      if (message.channel !== ITEM_WAKE_CHANNEL || space < 0 || payload.slice(0, space) === tag) return;
      options.onKeys(
        payload
          .slice(space + 1)
          .split(',')
          .filter((key) => key !== ''),
      );
    });
    next.once('end', () => lost(next));
    next.on('error', () => lost(next));
    await next.query(`LISTEN ${ITEM_WAKE_CHANNEL}`);
    return next;
  };
  const lost = (which: pg.Client): void => {
    if (client !== which || closed) return;
    client = null;
    which.end().catch(() => {});
    if (!lossLogged) options.log(`agentmbx relay: the held-pull notification connection to ${where} ended: reconnecting`);
    lossLogged = true;
    schedule();
  };
  const schedule = (): void => {
    if (closed || retry !== null) return;
    retry = setTimeout(() => {
      retry = null;
      connect().then(
        (next) => {
          if (closed) {
            void next.end();
            return;
          }
          client = next;
          lossLogged = false;
          options.log(`agentmbx relay: the held-pull notification connection to ${where} is back`);
          options.onReconnect();
        },
        () => schedule(),
      );
    }, WAKE_RECONNECT_MS);
    retry.unref();
  };

  client = await connect();
  return {
    notify(keys) {
      const on = client;
      if (on === null) return;
      for (let at = 0; at < keys.length; at += WAKE_KEYS_PER_NOTIFY) {
        const payload = `${tag} ${keys.slice(at, at + WAKE_KEYS_PER_NOTIFY).join(',')}`;
        // a lost notification delays a pull elsewhere by at most its wait; the connection's loss is handled above
        on.query('SELECT pg_notify($1, $2)', [ITEM_WAKE_CHANNEL, payload]).catch(() => {});
      }
    },
    async close() {
      closed = true;
      if (retry !== null) clearTimeout(retry);
      const on = client;
      client = null;
      await on?.end().catch(() => {});
    },
  };
}
