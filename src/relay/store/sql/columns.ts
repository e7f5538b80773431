// Typed reads of result rows, for both SQL backends. A value of the wrong type means a damaged
// store: the readers throw rather than hand the core something it did not ask for.

/** One result row as node:sqlite and pg hand it over (pg's rows are narrowed to these types). */
export type Row = Record<string, null | number | bigint | string | Uint8Array>;

function damaged(column: string, wanted: string): Error {
  return new Error(`relay store damaged: column ${column} is not ${wanted}`);
}

export function int(row: Row, column: string): number {
  const value = row[column];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw damaged(column, 'an integer');
  return value;
}

export function intOrNull(row: Row, column: string): number | null {
  return row[column] === null ? null : int(row, column);
}

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw damaged(column, 'text');
  return value;
}

export function textOrNull(row: Row, column: string): string | null {
  return row[column] === null ? null : text(row, column);
}

export function blob(row: Row, column: string): Uint8Array {
  const value = row[column];
  if (!(value instanceof Uint8Array)) throw damaged(column, 'a blob');
  return value;
}

/** Times and seqs the store is handed must be safe integers (Unix ms). */
export function assertInteger(value: number, what: string): void {
  if (!Number.isSafeInteger(value)) throw new TypeError(`${what} must be a safe integer, got ${value}`);
}
