// Reading and writing the clients' config files: JSON (Claude Code settings, Cursor, Gemini) and
// TOML (Codex). A write replaces the file atomically (temporary file, rename) and keeps its mode;
// only our own entries change, every other key stays as the user wrote it.
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import { canonicalJson } from '../protocol/canonical.ts';

/** Largest client config file setup reads (they are a few KiB; Claude Code's state file grows). */
export const CONFIG_FILE_MAX_BYTES = 16 * 1024 * 1024;

export class ConfigFileError extends Error {}

export function readText(path: string): string | null {
  if (!existsSync(path)) return null;
  if (statSync(path).size > CONFIG_FILE_MAX_BYTES) throw new ConfigFileError(`${path} is over ${CONFIG_FILE_MAX_BYTES} bytes: not a config file setup edits`);
  return readFileSync(path, 'utf8');
}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The file's JSON object, {} when it does not exist. */
export function readJsonObject(path: string): JsonObject {
  const text = readText(path);
  if (text === null || text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigFileError(`${path} is not valid JSON (${(err as Error).message}): fix or move it, then run setup again`);
  }
  if (!isObject(value)) throw new ConfigFileError(`${path} does not hold a JSON object: fix or move it, then run setup again`);
  return value;
}

/** Writes `text` to `path` atomically, keeping the old file's mode (new files: 0600). */
export function writeText(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const mode = existsSync(path) ? statSync(path).mode & 0o777 : 0o600;
  const temporary = `${path}.agentmbx-${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode });
  chmodSync(temporary, mode);
  renameSync(temporary, path);
}

export function jsonText(value: JsonObject): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function parseTomlText(path: string, text: string): JsonObject {
  try {
    return parseToml(text) as JsonObject;
  } catch (err) {
    throw new ConfigFileError(`${path} is not valid TOML (${(err as Error).message.split('\n')[0]}): fix it, then run setup again`);
  }
}

/** The file's TOML as an object, {} when it does not exist. */
export function readToml(path: string): JsonObject {
  const text = readText(path);
  return text === null ? {} : parseTomlText(path, text);
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$/;

function tableName(header: string): string {
  return header
    .split('.')
    .map((part) => part.trim().replace(/^["']|["']$/g, ''))
    .join('.');
}

/**
 * The TOML text with the table `table` (`mcp_servers.agentmbx`) and its subtables replaced by
 * `entry` (or removed when null). The rest of the text, comments and all, is kept as it was; the
 * result is checked by parsing it: a file whose entry setup cannot cut out cleanly is refused.
 */
export function replaceTomlTable(path: string, text: string, table: string, entry: JsonObject | null): string {
  const before = parseTomlText(path, text);
  const kept: string[] = [];
  let inOurs = false;
  for (const line of text.split('\n')) {
    const header = TABLE_HEADER.exec(line);
    if (header !== null) {
      const name = tableName(header[1] ?? '');
      inOurs = name === table || name.startsWith(`${table}.`);
    }
    if (!inOurs) kept.push(line);
  }
  let out = kept.join('\n').replace(/\n*$/, '\n');
  if (out.trim() === '') out = '';
  if (entry !== null) {
    const keys = table.split('.');
    let wrapped: JsonObject = entry;
    for (const key of keys.reverse()) wrapped = { [key]: wrapped };
    out += `${out === '' ? '' : '\n'}${stringifyToml(wrapped)}\n`;
  }
  const unsafe = new ConfigFileError(
    `${path} defines [${table}] in a form setup cannot edit safely (inline or dotted keys): remove it by hand, then run setup again`,
  );
  let after: JsonObject;
  try {
    after = parseToml(out) as JsonObject;
  } catch {
    throw unsafe;
  }
  if (canonicalJson(withoutTable(after, table)) !== canonicalJson(withoutTable(before, table)) || !sameValue(tableOf(after, table), entry ?? undefined)) {
    throw unsafe;
  }
  return out;
}

export function tableOf(doc: JsonObject, table: string): JsonObject | undefined {
  let at: unknown = doc;
  for (const key of table.split('.')) at = isObject(at) ? at[key] : undefined;
  return isObject(at) ? at : undefined;
}

function withoutTable(doc: JsonObject, table: string): JsonObject {
  const copy = structuredClone(doc);
  const keys = table.split('.');
  const last = keys.pop() as string;
  const parent = tableOf(copy, keys.join('.'));
  if (parent !== undefined) {
    delete parent[last];
    // an empty parent we created or emptied is not a difference
    if (Object.keys(parent).length === 0 && keys.length > 0) delete (tableOf(copy, keys.slice(0, -1).join('.')) ?? copy)[keys.at(-1) as string];
  }
  return copy;
}

/** Equal as JSON values, whatever the order of their keys. */
export function sameValue(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonicalJson(a) === canonicalJson(b);
}
