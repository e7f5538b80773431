// How the PostgreSQL store talks to the server: one pooled client per transaction, every statement a
// named prepared statement (parsed once per connection), bigint columns read as numbers (times and
// seqs are Unix milliseconds, far below 2^53; columns.ts refuses anything unsafe).
import pg from 'pg';
import type { Row } from '../sqlite/columns.ts';

const INT8_OID = 20;

/** Type parsers for the store's pools: bigint (int8) becomes a number instead of a string. */
export const STORE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as 'text'))) as pg.CustomTypesConfig['getTypeParser'],
};

/** Statement names by text; the texts are constants in this folder, so the map stays small. */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `mbx_${statementNames.size}`;
    statementNames.set(text, name);
  }
  return name;
}

/** A connection inside one transaction, as the query modules see it. */
export interface Sql {
  rows(text: string, values?: unknown[]): Promise<Row[]>;
  /** the first row, or undefined */
  row(text: string, values?: unknown[]): Promise<Row | undefined>;
  /** runs a statement; returns the rows it changed */
  run(text: string, values?: unknown[]): Promise<number>;
  /** runs statements without parameters or preparing (BEGIN, COMMIT, a migration's script) */
  exec(text: string): Promise<void>;
}

/** The connection of the read or transaction still open; throws once it ended. */
export type UsePg = () => Sql;

export function sqlOver(client: pg.ClientBase): Sql {
  // one statement at a time on the connection: a caller that runs reads side by side (Promise.all)
  // gets them in order, as pg will require
  let last: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(send: () => Promise<T>): Promise<T> => {
    const next = last.then(send, send);
    last = next.catch(() => {});
    return next;
  };
  const query = (text: string, values: unknown[] = []): Promise<pg.QueryResult> => inTurn(() => client.query({ name: statementName(text), text, values }));
  return {
    async rows(text, values) { return (await query(text, values)).rows as Row[]; },
    async row(text, values) { return (await query(text, values)).rows[0] as Row | undefined; },
    async run(text, values) { return (await query(text, values)).rowCount ?? 0; },
    async exec(text) { await inTurn(() => client.query(text)); },
  };
}

/** The SQLSTATE of a server error, or null. */
export function sqlState(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}
