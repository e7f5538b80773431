// A connection from the relay's pool. pg's pool gives up on a checkout after connectionTimeoutMillis
// (POSTGRES_CONNECT_TIMEOUT_MS) with a plain Error; that is the store overloaded (every connection
// busy for that long, or the server not answering), which a client retries (503 STORE_BUSY), not
// an internal error (500): seen with 20,000 held pulls whose reads ended together.
import type pg from 'pg';
import { StoreOverloadedError } from '../errors.ts';

/** pg-pool's message when no connection came within its timeout. */
const CHECKOUT_TIMEOUT = /^timeout exceeded when trying to connect$/;

export async function pooledClient(pool: pg.Pool): Promise<pg.PoolClient> {
  try {
    return await pool.connect();
  } catch (error) {
    if (error instanceof Error && CHECKOUT_TIMEOUT.test(error.message)) throw new StoreOverloadedError();
    throw error;
  }
}
