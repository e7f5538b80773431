// The relay's fixed caps (protocol.md §6). They bound memory or protocol timing, so no config file,
// flag or variable changes them; the configurable settings are in settings.ts.

/** Body cap of challenge, enrol and rotate: these routes need no auth, so their bodies stay tiny. */
export const ENROL_BODY_MAX_BYTES = 8192;
/** Live (not revoked) enrolments a relay admits; enrolment is free, so its table is capped. */
export const MAX_LIVE_ENROLMENTS = 100_000;
/** Open challenges held in memory at once; over it a challenge request answers 503. */
export const MAX_OPEN_CHALLENGES = 10_000;
/** Relay processes `relay serve --workers` starts at most (each is a whole process with its own memory). */
export const MAX_WORKERS = 64;
/** A challenge is single use and dies after this long. */
export const CHALLENGE_LIFE_MS = 300_000;
/** Client addresses tracked by the enrolment rate limiter (an in-memory table). */
export const MAX_RATE_ADDRESSES = 50_000;
/** A name carried by more live enrolments than this is ambiguous to v1 name lookups. */
export const CROWDED_NAME_HOSTS = 16;
/** A sender list whose iat is further ahead of the relay clock is refused (it could freeze the list); the rule lives with the record. */
export { SENDER_LIST_MAX_FUTURE_MS } from '../protocol/records/sender-list.ts';
/** Dedup rows outlive retention by this many days, so a late retry of an expired item is still a duplicate. */
export const DEDUP_HORIZON_EXTRA_DAYS = 7;
/** Held pulls (`wait`, protocol.md §3.4) one relay process keeps at most; past it a pull is answered at once, never dropped. */
export const MAX_HELD_PULLS = 50_000;
/**
 * V8 heap one held pull may take (its socket, request, reply and table entry): about 9.5 KB each
 * was measured with 19,000 held in one process (docs/benchmark.md), rounded up.
 */
export const HELD_PULL_HEAP_BYTES = 12_000;
/** Share of a process's heap limit its held pulls may take: the rest is for pull pages (8 MiB each) and the relay itself. */
export const HELD_PULL_HEAP_SHARE = 0.6;
/** Longest `max_wait_s` a config may set: a held pull must stay well inside the hop's ±5 minute skew. */
export const MAX_WAIT_S_LIMIT = 300;
/** How often a running relay writes its heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 30_000;

// Bounds of the configurable settings, with why.
/** Longest retention accepted (100 years): keeps every expiry time a safe integer and a valid Date. */
export const MAX_RETENTION_DAYS = 36_500;
/** Longest sweep period: Node timers fire at once for delays above 2^31−1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** Shortest sweep period: a sweep takes the single writer, so it must not run back to back. */
export const MIN_SWEEP_INTERVAL_MS = 100;
/** Longest text setting accepted (an issuer, a JWKS URL, an audience). */
export const MAX_SETTING_CHARS = 2048;
