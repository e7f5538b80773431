// The bounds of a hosted relay's account tokens (docs/hosted-relay.md), apart from their checks
// (account-token.ts): the HTTP face and the deny-list rules need them on every relay, and the JWT
// library the checks load is kept off a relay that has no account tokens (docs/relay-operator.md "Memory").

/** Longest token lifetime accepted: `exp` at most this many seconds after `iat`. */
export const MAX_TOKEN_LIFETIME_S = 15 * 60;
/** Clock difference tolerated between the issuer and the relay on `exp`, `iat` and `nbf`. */
export const TOKEN_CLOCK_TOLERANCE_S = 30;
/** Longest token text looked at (an enrol body is capped at 8 KiB anyway). */
export const MAX_TOKEN_CHARS = 4096;
/** Longest claim value kept (account, org, sub, client_id, jti). */
export const MAX_CLAIM_CHARS = 256;
/** The `name` (stored as `authorized_by`) of the account-token authority. */
export const ACCOUNT_TOKEN_AUTHORITY = 'account-token';
