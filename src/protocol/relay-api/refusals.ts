// Every refusal a relay answers, in one catalogue in the manner of fastify's lib/errors.js: a stable
// code, the sentence a person reads (`{name}` marks a detail filled in per refusal) and the HTTP
// status. The relay core throws `Refusal(code, details)` and never picks a status; the relay's HTTP
// face maps the code to its status here; a host branches on the code. A code is never reused for
// another meaning, and never renamed: programs match on it.
//
// Where the code travels: every refusal carries it in the `x-mbx-refusal` header. The JSON body
// names it (`code`) only for the entries marked `codeInBody`, the codes clients have always seen
// there; the other bodies stay exactly as the protocol writes them (`{"error":"bad relay hop"}`).

/** The response header that names the refusal code of every refusal answer. */
export const REFUSAL_HEADER = 'x-mbx-refusal';

interface CatalogueEntry {
  status: number;
  sentence: string;
  codeInBody?: true;
}

export const REFUSALS = {
  // The HTTP layer: the request as bytes, before any route's rules.
  BAD_JSON: { status: 400, sentence: 'request body is not valid JSON', codeInBody: true },
  BODY_TOO_LARGE: { status: 413, sentence: 'request body too large' },
  NOT_FOUND: { status: 404, sentence: 'not found' },
  METHOD_NOT_ALLOWED: { status: 405, sentence: 'method not allowed' },
  MISSING_HOST_HEADER: { status: 400, sentence: 'missing Host header' },
  MALFORMED_REQUEST: { status: 400, sentence: 'malformed request' },
  MALFORMED_HTTP: { status: 400, sentence: 'malformed HTTP request' },
  HEADERS_TOO_LARGE: { status: 431, sentence: 'request headers too large' },
  REQUEST_TIMEOUT: { status: 408, sentence: 'the request took too long to arrive' },
  INTERNAL: { status: 500, sentence: 'internal error' },
  // The store: temporary, the client retries (the answer has retry-after).
  STORE_BUSY: { status: 503, sentence: 'the relay is busy: try again shortly' },
  STORE_FULL: { status: 507, sentence: "the relay's disk is full: try again later", codeInBody: true },
  STORE_IO: { status: 503, sentence: "the relay's disk failed a write: try again later", codeInBody: true },
  STORE_SYNC_FAILED: { status: 503, sentence: "the relay's disk failed to sync: try again later", codeInBody: true },
  // Who is calling: the hop, and on a hosted relay its token and deny-list.
  BAD_HOP: { status: 401, sentence: 'bad relay hop' },
  TOKEN_REQUIRED: { status: 401, sentence: 'this {route} needs "authorization: Bearer <{token} token>"{when}', codeInBody: true },
  TOKEN_INVALID: { status: 401, sentence: '{token} token refused: {reason}', codeInBody: true },
  AUTHORITY_UNAVAILABLE: { status: 503, sentence: '{what}: {reason}', codeInBody: true },
  DENIED: { status: 403, sentence: '{reason}', codeInBody: true },
  // Enrolment (challenge, enrol).
  RATE: { status: 429, sentence: 'too many enrolment requests from this address: wait a minute', codeInBody: true },
  BAD_ENROLMENT: { status: 400, sentence: 'missing or malformed {field}' },
  CHALLENGES_FULL: { status: 503, sentence: 'too many open enrolment challenges: try again in a few minutes' },
  NO_CHALLENGE: { status: 401, sentence: 'no open challenge for this key: request a new one' },
  BAD_ENROLMENT_SIGNATURE: { status: 401, sentence: 'bad enrolment signature' },
  REVOKED: { status: 403, sentence: 'this host key was revoked on this relay', codeInBody: true },
  ENROLMENTS_FULL: { status: 503, sentence: 'this relay has reached its enrolment capacity' },
  NAME_TAKEN: { status: 409, sentence: 'the name {host} is already enrolled in this account', codeInBody: true },
  // Push (v2 and v1).
  BAD_PUSH: { status: 400, sentence: 'body must be {shape}' },
  BATCH_TOO_LARGE: { status: 400, sentence: 'at most {max} {what} per push' },
  // Pull and ack.
  BAD_PULL: { status: 400, sentence: '{field} must be {shape}' },
  EPOCH: { status: 409, sentence: '{why}: pull again from 0', codeInBody: true },
  BAD_ACK: { status: 400, sentence: '{reason}', codeInBody: true },
  BAD_V1_ACK: { status: 400, sentence: 'cursor must be a number' },
  // Sender lists.
  SENDER_LIST_NOT_OWN: { status: 403, sentence: 'a sender list may only be published by its own host' },
  SENDER_LIST_IAT_AHEAD: { status: 400, sentence: 'sender list iat is in the future' },
  SENDER_LIST_BAD_SIGNATURE: { status: 401, sentence: 'bad sender list signature' },
  SENDER_LIST_REFUSED: { status: 400, sentence: 'sender list refused: {reason}' },
  SENDER_LIST_NOT_NEWER: { status: 409, sentence: 'a sender list at least as new is already stored' },
  // Rotation.
  BAD_ROTATION: { status: 400, sentence: 'rotation refused: {reason}', codeInBody: true },
  ROTATION_KEY_REVOKED: { status: 409, sentence: 'the new key was revoked on this relay' },
  ROTATION_UNKNOWN_KEY: { status: 404, sentence: 'the old key is not enrolled here' },
  // Encryption-key ads.
  ENC_AD_REFUSED: { status: 400, sentence: 'enc-key ad refused: {reason}' },
  // 410, never 400: AgentMBX hosts take 404/410 as "v1 is retired" and any other refusal as a reason to republish every tick.
  ENC_AD_V1_RETIRED: { status: 410, sentence: 'v1 enc-key ad not stored: {reason} (v1 ads are retired here; the v2 ad is what counts)', codeInBody: true },
  BAD_LOOKUP: { status: 400, sentence: '{field} must be {shape}' },
  UNKNOWN_HOST: { status: 404, sentence: 'unknown host' },
  // The deny-list of a hosted relay (POST /v2/relay/admin/deny).
  BAD_DENY_ENTRIES: { status: 400, sentence: '{problem}' },
  DENY_LIST_FULL: { status: 503, sentence: 'the deny-list is full ({max} live entries)' },
} as const satisfies Record<string, CatalogueEntry>;

export type RefusalCode = keyof typeof REFUSALS;

/** The `{name}` details of a sentence template. */
type Placeholders<S extends string> = S extends `${string}{${infer Name}}${infer Rest}` ? Name | Placeholders<Rest> : never;

export type RefusalDetails<C extends RefusalCode> = Record<Placeholders<(typeof REFUSALS)[C]['sentence']>, string | number>;

/** No details argument for a sentence without placeholders; a required one otherwise. */
type DetailsArgs<C extends RefusalCode> = [Placeholders<(typeof REFUSALS)[C]['sentence']>] extends [never]
  ? [details?: Record<never, never>, extra?: Record<string, unknown>]
  : [details: RefusalDetails<C>, extra?: Record<string, unknown>];

const ALL_CODES: ReadonlySet<string> = new Set(Object.keys(REFUSALS));

export function isRefusalCode(value: unknown): value is RefusalCode {
  return typeof value === 'string' && ALL_CODES.has(value);
}

/** The catalogue's sentence of `code` with `details` filled in. */
export function refusalSentence(code: RefusalCode, details: Record<string, string | number> = {}): string {
  return REFUSALS[code].sentence.replace(/\{([a-z_]+)\}/g, (_, name: string) => String(details[name] ?? ''));
}

/**
 * A refusal: its code, its sentence and the members its answer adds (`epoch` on EPOCH). No status:
 * the HTTP face takes it from the catalogue.
 */
export class Refusal<C extends RefusalCode = RefusalCode> extends Error {
  readonly code: C;
  readonly extra: Record<string, unknown>;
  constructor(code: C, ...[details, extra]: DetailsArgs<C>) {
    super(refusalSentence(code, details));
    this.code = code;
    this.extra = { ...extra };
  }

  /** Adds members to the answer (the core knows some only after the parser refused: `head_seq`). */
  withMembers(members: Record<string, unknown>): this {
    Object.assign(this.extra, members);
    return this;
  }

  /** `{error, code?, …extra}`, in this order (the answer's bytes are the protocol's). */
  body(): Record<string, unknown> {
    const entry: CatalogueEntry = REFUSALS[this.code];
    return { error: this.message, ...(entry.codeInBody === true ? { code: this.code } : {}), ...this.extra };
  }
}

/** What a parser gives: the typed request, or the refusal to answer. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export const parsed = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const refused = <T = never>(refusal: Refusal): Parsed<T> => ({ ok: false, refusal });

/** The request of `result`, or its refusal thrown (the core's way to use a parser). */
export function takeParsed<T>(result: Parsed<T>): T {
  if (!result.ok) throw result.refusal;
  return result.value;
}
