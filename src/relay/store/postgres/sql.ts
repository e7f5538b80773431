// How the PostgreSQL store talks to the server: one pooled client per transaction, every statement a
// named prepared statement (parsed once per connection), bigint columns read as numbers (times and
// seqs are Unix milliseconds, far below 2^53; columns.ts refuses anything unsafe).
//
// Statements travel in batches (docs/benchmark.md "PostgreSQL push path" measured why: a push's
// round trips, socket writes and the server's answers, one flush per statement, were most of its
// cost). The statements asked for in one burst of the event loop (the synchronous code and the
// promise callbacks that follow it) go out as one batch: their extended-protocol messages in one
// socket write, closed by one Sync, which the server answers with one flush. The server runs a
// batch's statements in order, each with its own snapshot (READ COMMITTED); when one fails it skips
// the rest up to the Sync, and every statement after the failed one fails with that error. So:
// - a statement whose answer nobody needs before the next one (a lock, a savepoint) is `send`t, and
//   the next statement rides in its batch; its failure is thrown by the next statement awaited (or
//   by `settleSent`), and a statement behind it never ran;
// - a transaction's BEGIN may ride with its first statement: when BEGIN fails, nothing behind it runs.
import pg from 'pg';
import pgUtils from 'pg/lib/utils.js';
import type { Row } from '../sql/columns.ts';

const INT8_OID = 20;

/** Type parsers for the store's pools: bigint (int8) becomes a number instead of a string. */
export const STORE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
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

/** What a store's connections sent, for its traffic figures (`PostgresRelayStore.traffic`). */
export interface Traffic {
  /** statements */
  statements: number;
  /** batches: each one socket write, and one round trip for the code that waits for its answers */
  writes: number;
}

/** A statement's answer: its rows (column name to parsed value), the rows it changed, its command tag. */
interface Answer {
  rows: Row[];
  rowCount: number;
  command: string;
}

/** A connection inside one transaction, as the query modules see it. */
export interface Sql {
  rows(text: string, values?: unknown[]): Promise<Row[]>;
  /** the first row, or undefined */
  row(text: string, values?: unknown[]): Promise<Row | undefined>;
  /** runs a statement; returns the rows it changed */
  run(text: string, values?: unknown[]): Promise<number>;
  /** runs one statement without parameters (BEGIN, COMMIT); returns its command tag */
  exec(text: string): Promise<string>;
  /** runs a script of several statements without parameters (a migration) by the simple protocol */
  script(text: string): Promise<void>;
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

interface Statement {
  text: string;
  /** the values as pg writes them (pg's own conversion: arrays, byte arrays, null) */
  values: unknown[];
  resolve(answer: Answer): void;
  reject(error: unknown): void;
}

/** The statements this connection has prepared (by name), kept beside the connection pg owns. */
const preparedOn = new WeakMap<pg.Connection, Set<string>>();

/** How the row counts of a command tag read ("INSERT 0 3", "UPDATE 2", "SELECT 1"). */
const COMMAND_TAG = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

/**
 * One batch as pg runs a query (its Submittable): Parse (once per connection, after a Close that
 * makes it safe to repeat), Bind, Describe and Execute of each statement, then one Sync.
 */
class Batch {
  readonly #statements: Statement[];
  #done: (() => void) | null;
  #answered = 0;
  #columns: Array<{ name: string; parse: (value: string) => unknown }> = [];
  #rows: Row[] = [];
  #connection: pg.Connection | null = null;
  #parsedHere: string[] = [];

  /** `done` is told once every statement has its answer or its error */
  constructor(statements: Statement[], done: () => void) {
    this.#statements = statements;
    this.#done = done;
  }

  submit(connection: pg.Connection): void {
    this.#connection = connection;
    let prepared = preparedOn.get(connection);
    if (prepared === undefined) {
      prepared = new Set();
      preparedOn.set(connection, prepared);
    }
    connection.stream.cork();
    try {
      for (const statement of this.#statements) {
        const name = statementName(statement.text);
        if (!prepared.has(name)) {
          // a Parse that failed (or never ran) in an earlier batch may or may not have left the name behind
          connection.close({ type: 'S', name }, true);
          connection.parse({ name, text: statement.text, types: [] }, true);
          prepared.add(name);
          this.#parsedHere.push(name);
        }
        connection.bind({ statement: name, values: statement.values as never }, true);
        connection.describe({ type: 'P', name: '' }, true);
        connection.execute({ portal: '' }, true);
      }
      connection.sync();
    } finally {
      connection.stream.uncork();
    }
  }

  handleRowDescription(message: { fields: Array<{ name: string; dataTypeID: number }> }): void {
    this.#columns = message.fields.map((field) => ({
      name: field.name,
      parse: STORE_TYPES.getTypeParser(field.dataTypeID, 'text') as (value: string) => unknown,
    }));
  }

  handleDataRow(message: { fields: Array<string | null> }): void {
    const row: Row = {};
    this.#columns.forEach((column, index) => {
      const value = message.fields[index] ?? null;
      // pg's parsers give what the columns hold (arrays, booleans too), as the rows of pg's own queries did
      row[column.name] = (value === null ? null : column.parse(value)) as Row[string];
    });
    this.#rows.push(row);
  }

  handleCommandComplete(message: { text: string }): void {
    const tag = COMMAND_TAG.exec(message.text);
    this.#next({ rows: this.#rows, rowCount: Number(tag?.[3] ?? tag?.[2] ?? 0), command: tag?.[1] ?? '' });
  }

  handleEmptyQuery(): void {
    this.#next({ rows: [], rowCount: 0, command: '' });
  }

  /** the statement that failed gets the error, and so does every one behind it (the server skipped them) */
  handleError(error: unknown): void {
    const failed = this.#statements.slice(this.#answered);
    // their Parse never ran, or failed: parsed again (after a Close) when next used
    const notPrepared = new Set(failed.map((statement) => statementName(statement.text)));
    const prepared = this.#connection === null ? undefined : preparedOn.get(this.#connection);
    for (const name of this.#parsedHere) if (notPrepared.has(name)) prepared?.delete(name);
    this.#answered = this.#statements.length;
    for (const statement of failed) statement.reject(error);
    this.#finish();
  }

  handleReadyForQuery(): void {
    if (this.#answered < this.#statements.length) this.handleError(new Error('the relay store database answered a batch of statements only in part'));
    else this.#finish();
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(): void {}

  handleCopyData(): void {}

  /** tells `done` once, however pg ended the batch (its answer, a server error, a lost connection) */
  #finish(): void {
    const done = this.#done;
    this.#done = null;
    done?.();
  }

  #next(answer: Answer): void {
    const statement = this.#statements[this.#answered];
    this.#answered += 1;
    this.#columns = [];
    this.#rows = [];
    statement?.resolve(answer);
  }
}

/** `traffic` is added to as statements and batches go out (the store's running totals). */
export function sqlOver(client: pg.ClientBase, traffic: Traffic = { statements: 0, writes: 0 }): Sql {
  // statements asked for and not yet sent: they leave as one batch at the end of the burst, or
  // once the batch in flight is answered (one batch at a time: pg runs one query at a time)
  let pending: Statement[] = [];
  let inFlight = false;
  let flushing = false;
  let unsettled: Array<Promise<unknown>> = [];
  const flush = (): void => {
    flushing = false;
    if (inFlight || pending.length === 0) return;
    const statements = pending;
    pending = [];
    inFlight = true;
    traffic.writes += 1;
    client.query(
      new Batch(statements, () => {
        inFlight = false;
        flush();
      }),
    );
  };
  const submit = (text: string, values: readonly unknown[]): Promise<Answer> => {
    const answer = new Promise<Answer>((resolve, reject) => {
      pending.push({ text, values: values.map((value) => pgUtils.prepareValue(value)), resolve, reject });
    });
    // an answer nobody awaited yet (a statement before it failed first) must not count as unhandled
    answer.catch(() => {});
    traffic.statements += 1;
    if (!flushing && !inFlight) {
      flushing = true;
      // after the microtasks already queued (the callers' continuations, which may ask for more)
      queueMicrotask(() => {
        process.nextTick(flush);
      });
    }
    return answer;
  };
  const settleSent = async (): Promise<void> => {
    const sent = unsettled;
    unsettled = [];
    for (const statement of sent) await statement;
  };
  const query = async (text: string, values: unknown[] = []): Promise<Answer> => {
    const answer = submit(text, values);
    await settleSent();
    return answer;
  };
  return {
    async rows(text, values) {
      return (await query(text, values)).rows;
    },
    async row(text, values) {
      return (await query(text, values)).rows[0];
    },
    async run(text, values) {
      return (await query(text, values)).rowCount;
    },
    async exec(text) {
      return (await query(text)).command;
    },
    async script(text) {
      // run alone: nothing of this connection's is pending or in flight once what was sent settled
      await settleSent();
      await client.query(text);
    },
    send(text, values = []) {
      const answer = submit(text, values);
      unsettled.push(answer);
      const first = answer.then((sent) => sent.rows[0]);
      first.catch(() => {});
      return first;
    },
    sendAhead(text) {
      const answered = submit(text, []).then(() => {});
      answered.catch(() => {});
      return answered;
    },
    settleSent,
  };
}

/** Error of a lookup (RelayStore.lookup) that asked a second statement: a bug of its caller. */
export class SecondStatementError extends Error {
  constructor() {
    super('a store lookup runs one statement: a read of more needs RelayStore.read');
  }
}

/** `sql` for a lookup: its one statement runs on its own (its own snapshot); asking another throws SecondStatementError. */
export function oneStatement(sql: Sql): Sql {
  let asked = false;
  const once = <T>(run: () => Promise<T>): Promise<T> => {
    if (asked) return Promise.reject(new SecondStatementError());
    asked = true;
    return run();
  };
  return {
    rows: (text, values) => once(() => sql.rows(text, values)),
    row: (text, values) => once(() => sql.row(text, values)),
    run: (text, values) => once(() => sql.run(text, values)),
    exec: (text) => once(() => sql.exec(text)),
    script: (text) => once(() => sql.script(text)),
    send: (text, values) => once(() => sql.send(text, values)),
    sendAhead: (text) => once(() => sql.sendAhead(text)),
    settleSent: () => sql.settleSent(),
  };
}

/** The SQLSTATE of a server error, or null. */
export function sqlState(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
}

/** Ends the transaction; false when that failed (a lost connection, which is then not reused). */
export async function finish(sql: Sql, how: 'COMMIT' | 'ROLLBACK'): Promise<boolean> {
  try {
    await sql.exec(how);
    return true;
  } catch {
    return false;
  }
}
