// The revocation deny-list of a hosted relay (docs/hosted-relay.md): POST /v2/relay/admin/deny
// {entries:[{host_fp?, client_id?, reason, until}, …]} with an operator token →
// 200 {ok:true, entries, sessions_dropped}. Not part of the protocol: ours.
import { parseFingerprintInput } from '../fingerprint.ts';
import { isPlainObject } from '../validate.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

/** Entries one deny request may carry. */
export const MAX_DENY_ENTRIES_PER_REQUEST = 1000;
/** Longest `reason` of a deny entry. */
export const MAX_DENY_REASON_CHARS = 500;
/** Latest `until` accepted: ten years ahead. */
export const MAX_DENY_MS = 3650 * 86_400_000;

export interface DenyRequestEntry {
  kind: 'host_fp' | 'client_id';
  /** the canonical host fingerprint, or the client_id */
  value: string;
  reason: string;
  untilMs: number;
}

/** The token rules an entry must fit: a client_id is a token claim; a deny outlives any token. */
export interface DenyRules {
  maxClaimChars: number;
  /** `until` at least this far ahead (the longest token lifetime) */
  minAheadMs: number;
}

const bad = (problem: string): Refusal => new Refusal('BAD_DENY_ENTRIES', { problem });

/** One entry, `where` naming it in a refusal; a host_fp and a client_id give two entries. */
function parseEntry(raw: unknown, where: string, nowMs: number, rules: DenyRules): DenyRequestEntry[] | Refusal {
  const entry = isPlainObject(raw) ? raw : {};
  const { host_fp: hostFpText, client_id: clientId, reason, until: untilText } = entry;
  const hostFp = typeof hostFpText === 'string' ? parseFingerprintInput(hostFpText) : null;
  if (hostFpText !== undefined && hostFp === null) return bad(`${where}.host_fp is not a host fingerprint`);
  if (clientId !== undefined && (typeof clientId !== 'string' || clientId === '' || clientId.length > rules.maxClaimChars))
    return bad(`${where}.client_id must be a non-empty string`);
  if (hostFp === null && clientId === undefined) return bad(`${where} needs host_fp or client_id`);
  if (typeof reason !== 'string' || reason.trim() === '' || reason.length > MAX_DENY_REASON_CHARS)
    return bad(`${where}.reason must be a sentence of at most ${MAX_DENY_REASON_CHARS} characters`);
  const until = typeof untilText === 'string' ? Date.parse(untilText) : NaN;
  if (!Number.isFinite(until)) return bad(`${where}.until must be an ISO-8601 time`);
  if (until < nowMs + rules.minAheadMs) return bad(`${where}.until must be at least ${rules.minAheadMs / 60_000} minutes ahead (the longest token lifetime)`);
  if (until > nowMs + MAX_DENY_MS) return bad(`${where}.until is more than ten years ahead`);
  const common = { reason, untilMs: until };
  return [
    ...(hostFp === null ? [] : [{ kind: 'host_fp' as const, value: hostFp, ...common }]),
    ...(typeof clientId === 'string' ? [{ kind: 'client_id' as const, value: clientId, ...common }] : []),
  ];
}

export function parseDenyRequest(body: unknown, nowMs: number, rules: DenyRules): Parsed<DenyRequestEntry[]> {
  const entries = isPlainObject(body) ? body['entries'] : undefined;
  if (!Array.isArray(entries) || entries.length === 0) return refused(bad('body must be {entries:[{host_fp?, client_id?, reason, until}, …]}'));
  if (entries.length > MAX_DENY_ENTRIES_PER_REQUEST) return refused(bad(`at most ${MAX_DENY_ENTRIES_PER_REQUEST} entries per request`));
  const out: DenyRequestEntry[] = [];
  for (const [i, raw] of (entries as unknown[]).entries()) {
    const entry = parseEntry(raw, `entries[${i}]`, nowMs, rules);
    if (entry instanceof Refusal) return refused(entry);
    out.push(...entry);
  }
  return parsed(out);
}
