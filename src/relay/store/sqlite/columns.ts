// Typed reads of node:sqlite result rows. A value of the wrong type means a damaged store: the
// readers throw rather than hand the core something it did not ask for.
import type { SQLOutputValue, SQLTagStore } from 'node:sqlite';

export type Row = Record<string, SQLOutputValue>;

/** The statement handle of the transaction in progress; throws once that transaction ended. */
export type UseSql = () => SQLTagStore;

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
