// How a host reads a relay's answer: a typed value, or a refusal named by its code. The code comes
// from the body (`code`), else the `x-mbx-refusal` header; a relay that sends neither (an older one)
// is read by the endpoint's `legacy` table, which says what the protocol means by a bare status on
// that endpoint. Callers branch on `code` only.
import { isPlainObject } from '../validate.ts';
import { isRefusalCode, type RefusalCode } from './refusals.ts';

/** What came back, as the client saw it. */
export interface WireAnswer {
  status: number;
  body: unknown;
  /** the x-mbx-refusal header, or null */
  refusalCode: string | null;
}

/** A code this host does not know (a newer relay), or a 200 whose body it cannot read. */
export type UnknownRefusal = 'UNKNOWN';

export interface RefusedReply {
  ok: false;
  code: RefusalCode | UnknownRefusal;
  /** `HTTP <status>: <the relay's sentence>`, for a person */
  error: string;
  /** members the refusal adds (`epoch`, `head_seq` on EPOCH) */
  body: Record<string, unknown>;
}

export type Reply<T> = { ok: true; value: T } | RefusedReply;

/** What a relay that names no code means by a status on one endpoint. */
export type LegacyCodes = Readonly<Partial<Record<number, RefusalCode>>>;

/** Every hop-signed endpoint: a bare 401 is a refused hop (protocol.md §2). */
export const HOP_LEGACY: LegacyCodes = { 401: 'BAD_HOP' };

function refusalCode(answer: WireAnswer, legacy: LegacyCodes): RefusalCode | UnknownRefusal {
  const named = isPlainObject(answer.body) ? answer.body['code'] : undefined;
  const code = named ?? answer.refusalCode ?? legacy[answer.status];
  return isRefusalCode(code) ? code : 'UNKNOWN';
}

/** A refusal read from `answer` (whatever its status). */
export function refusalOf(answer: WireAnswer, legacy: LegacyCodes = {}): RefusedReply {
  const body = isPlainObject(answer.body) ? answer.body : {};
  const sentence = typeof body['error'] === 'string' ? body['error'] : 'no error text';
  return { ok: false, code: refusalCode(answer, legacy), error: `HTTP ${answer.status}: ${sentence}`, body };
}

/**
 * `answer` read: a 200 whose body `read` accepts is the value; a 200 it refuses is UNKNOWN; any
 * other status is the refusal it names.
 */
export function readReply<T>(answer: WireAnswer, read: (body: Record<string, unknown>) => T | null, legacy: LegacyCodes = HOP_LEGACY): Reply<T> {
  if (answer.status !== 200) return refusalOf(answer, legacy);
  const value = isPlainObject(answer.body) ? read(answer.body) : null;
  if (value === null) return { ok: false, code: 'UNKNOWN', error: 'HTTP 200: an answer this host cannot read', body: {} };
  return { ok: true, value };
}

/** `{ok:true}`, the answer of the publishing endpoints. */
export function readOk(body: Record<string, unknown>): { ok: true } | null {
  return body['ok'] === true ? { ok: true } : null;
}
