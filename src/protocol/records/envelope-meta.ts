// An envelope's `meta` (protocol §4.1): the four arrays a sender derives from the plain body, and
// the check every receiver (relay and host) applies to the members it knows.
import { NAME_RE } from '../names.ts';
import { isPlainObject } from '../validate.ts';

export const META_ORIGINS = ['agent', 'external'] as const;
export const META_SENDER_VERIFICATIONS = ['unverified', 'leased'] as const;
/** Highest `hop`: the agent-to-agent relay depth. */
export const MAX_META_HOP = 1000;
/** Longest `project` and `project_key`. */
export const MAX_META_PROJECT_CHARS = 300;
/** Most `local_names`. */
export const MAX_META_LOCAL_NAMES = 100;

/** The four arrays every envelope carries, even when empty. */
export type DerivedMeta = { mentions: string[]; directives: string[]; tags: string[]; task_refs: string[] };

export type EnvelopeMeta = DerivedMeta & {
  origin?: (typeof META_ORIGINS)[number];
  hop?: number;
  project?: string;
  project_key?: string;
  local_names?: string[];
  sender_verification?: (typeof META_SENDER_VERIFICATIONS)[number];
  /** Members beyond §4.1's list are tolerated: the signature covers them. */
  [member: string]: unknown;
};

const DERIVED_MEMBERS = ['mentions', 'directives', 'tags', 'task_refs'] as const;

// What ends a mention, a directive or a tag: the end of the text or any character that could not
// continue the word. A letter or digit (any script), `_`, `-`, `@`, `#` or `/` continues it, so
// `@ann_x`, `/claimed`, `/done/x` and `#tagé` are not cut short into something the writer did not
// type; sentence punctuation ends it (`@ann,` `/done.` `#release-2!`), but a `.` followed by a
// letter or digit does not (`@bob@desk.example.com` and `/done.txt` are not a mention or directive).
// A word longer than its limit is no match at all, never truncated.
const WORD_END = String.raw`(?![\p{L}\p{N}_@#/-]|\.[\p{L}\p{N}_])`;
// Letters are spelled out in both cases instead of using the `i` flag: with `u`, `i` would also
// match `ſ` (long s) and `K` (Kelvin sign), which lower-case to no valid name.
/** NAME_RE in either case (a mention is lower-cased after matching). */
const ANY_CASE_NAME = '[A-Za-z0-9][A-Za-z0-9-]{1,39}';
/** `@name` or `@name@host` at the start or after whitespace or `(`. */
const MENTION_RE = new RegExp(String.raw`(?<=^|[\s(])@(${ANY_CASE_NAME}(?:@${ANY_CASE_NAME})?)${WORD_END}`, 'gu');
/** The six directives, spelled exactly (`/Claim` is not one), at the start or after whitespace. */
const DIRECTIVE_RE = new RegExp(String.raw`(?<=^|\s)/(claim|done|blocked|approve|decision|checkin)${WORD_END}`, 'gu');
/** `#` then an ASCII letter and 1–40 ASCII word characters or `-`, at the start or after whitespace. */
const TAG_RE = new RegExp(String.raw`(?<=^|\s)#([A-Za-z][\w-]{1,40})${WORD_END}`, 'gu');
/** `T` and 2–6 digits, not inside a longer word (`xT123`, `T1234567` and `T12a` are no refs). */
const TASK_REF_RE = /(?<![\p{L}\p{N}_])(T\d{2,6})(?![\p{L}\p{N}_])/gu;

/** The first capture of every match, without repeats, in order of first appearance. */
function distinctMatches(text: string, re: RegExp, lowerCase: boolean): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(re)) {
    const value = m[1] ?? '';
    found.add(lowerCase ? value.toLowerCase() : value);
  }
  return [...found];
}

/** The four arrays of a new envelope, derived from its plain (unsealed) body. */
export function deriveMeta(plainBody: string): DerivedMeta {
  return {
    mentions: distinctMatches(plainBody, MENTION_RE, true),
    directives: distinctMatches(plainBody, DIRECTIVE_RE, false),
    tags: distinctMatches(plainBody, TAG_RE, true),
    task_refs: distinctMatches(plainBody, TASK_REF_RE, false),
  };
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function isOneOf(value: unknown, allowed: readonly string[]): boolean {
  return typeof value === 'string' && allowed.includes(value);
}

/** Checks of the optional members: each, when present, must pass its own. */
const OPTIONAL_MEMBER_CHECKS: Record<string, (value: unknown) => boolean> = {
  origin: (v) => isOneOf(v, META_ORIGINS),
  hop: (v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= MAX_META_HOP,
  project: (v) => typeof v === 'string' && v.length <= MAX_META_PROJECT_CHARS,
  project_key: (v) => typeof v === 'string' && v.length <= MAX_META_PROJECT_CHARS,
  local_names: (v) => isStringArray(v) && v.length <= MAX_META_LOCAL_NAMES && v.every((name) => NAME_RE.test(name)),
  sender_verification: (v) => isOneOf(v, META_SENDER_VERIFICATIONS),
};

/** Null when `meta` is a valid envelope meta; otherwise `bad meta` or `bad meta.<member>`. */
export function metaProblem(meta: unknown): string | null {
  if (!isPlainObject(meta)) return 'bad meta';
  for (const member of DERIVED_MEMBERS) {
    if (!isStringArray(meta[member])) return `bad meta.${member}`;
  }
  for (const [member, check] of Object.entries(OPTIONAL_MEMBER_CHECKS)) {
    if (Object.hasOwn(meta, member) && !check(meta[member])) return `bad meta.${member}`;
  }
  return null;
}
