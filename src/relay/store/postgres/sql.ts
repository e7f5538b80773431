// How the PostgreSQL store talks to the server: one pooled client per transaction, every statement a
// named prepared statement (parsed once per connection), bigint columns read as numbers (times and
// seqs are Unix milliseconds, far below 2^53; columns.ts refuses anything unsafe).
//
// The clients run in pg's pipeline mode: a statement goes out as soon as it is asked for, without
// waiting for the answers of the ones before it, and the server answers them in order. Two uses
// (docs/benchmark.md "PostgreSQL push path" measured why: round trips and socket writes were most
// of a push's cost):
// - a statement whose answer nobody needs before the next one (a lock, a savepoint) is `send`t, and
//   the next statement rides the same round trip; a failure of the sent one is thrown by the next
//   statement awaited (or by `settleSent`), so it fails what it belongs to;
// - the statements asked for in one burst of the event loop (the synchronous code and the promise
//   callbacks that follow it) leave in one socket write (the socket is corked until then).
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

/** What a connection sent, for the store's traffic figures (`PostgresRelayStore.traffic`). */
export interface Traffic {
  /** statements (a multi-statement text without parameters counts once) */
  statements: number;
  /** socket writes; each is one round trip of the code that waits for its answers */
  writes: number;
}

/** A connection inside one transaction, as the query modules see it. */
export interface Sql {
  rows(text: string, values?: unknown[]): Promise<Row[]>;
  /** the first row, or undefined */
  row(text: string, values?: unknown[]): Promise<Row | undefined>;
  /** runs a statement; returns the rows it changed */
  run(text: string, values?: unknown[]): Promise<number>;
  /** runs statements without parameters or preparing (BEGIN, COMMIT, a migration's script); returns the last one's command tag */
  exec(text: string): Promise<string>;
  /**
   * sends a statement without waiting for it (a lock, a read kept ahead): the next statement
   * awaited, and settleSent, throw its failure first; the promise is its first row
   */
  send(text: string, values?: unknown[]): Promise<Row | undefined>;
  /**
   * sends a statement of the caller's own (BEGIN, a savepoint) ahead of what follows, without
   * waiting; its failure is left to the promise, which the caller awaits before trusting what followed
   */
  sendAhead(text: string): Promise<void>;
  /** waits for the statements sent without waiting; throws the first failure among them */
  settleSent(): Promise<void>;
}

/** The connection of the read or transaction still open; throws once it ended. */
export type UsePg = () => Sql;

/** `traffic` is added to as statements and writes go out (the store's running totals). */
export function sqlOver(client: pg.ClientBase, traffic: Traffic = { statements: 0, writes: 0 }): Sql {
  // pg's pool hands out Clients, whose connection (and socket) its types leave out of ClientBase
  const socket = (client as pg.Client).connection.stream;
  let corked = false;
  let unsettled: Array<Promise<unknown>> = [];
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  const submit = (query: pg.QueryConfig | string): Promise<pg.QueryResult> => {
    if (!corked) {
      corked = true;
      traffic.writes += 1;
      socket.cork();
      // after the microtasks already queued (the callers' continuations, which may ask for more)
      queueMicrotask(() => { process.nextTick(uncork); });
    }
    traffic.statements += 1;
    const result = client.query(query);
    // a result nobody awaited yet (a later statement failed first) must not count as unhandled
    result.catch(() => {});
    return result;
  };
  const settleSent = async (): Promise<void> => {
    const sent = unsettled;
    unsettled = [];
    for (const statement of sent) await statement;
  };
  const query = async (text: string, values: unknown[] = []): Promise<pg.QueryResult> => {
    const result = submit({ name: statementName(text), text, values });
    await settleSent();
    return result;
  };
  return {
    async rows(text, values) { return (await query(text, values)).rows as Row[]; },
    async row(text, values) { return (await query(text, values)).rows[0] as Row | undefined; },
    async run(text, values) { return (await query(text, values)).rowCount ?? 0; },
    async exec(text) {
      const result = submit(text);
      await settleSent();
      // a text of several statements answers with one result each
      const answered = await result as pg.QueryResult | pg.QueryResult[];
      return (Array.isArray(answered) ? answered.at(-1) : answered)?.command ?? '';
    },
    send(text, values = []) {
      const result = submit({ name: statementName(text), text, values });
      unsettled.push(result);
      const first = result.then((answer) => answer.rows[0] as Row | undefined);
      first.catch(() => {});
      return first;
    },
    sendAhead(text) {
      const answered = submit(text).then(() => {});
      answered.catch(() => {});
      return answered;
    },
    settleSent,
  };
}

/** The SQLSTATE of a server error, or null. */
export function sqlState(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}
