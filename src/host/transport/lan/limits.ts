// Limits of the LAN endpoints (protocol §5). Every one is enforced by the server and respected by
// the client.

/**
 * How long the client waits for a peer's TCP connect before the call counts as failed. A LAN peer
 * answers a SYN within milliseconds (measured in docs/host.md); 2.5 s still covers one lost SYN,
 * which Linux sends again after 1 s, and stops before its second resend at 3 s. A peer that drops
 * packets silently then costs 2.5 s, not the fetch default of 10 s.
 */
export const LAN_CONNECT_TIMEOUT_MS = 2_500;
/** Largest request body on /v2/envelopes and /v1/receipts (decided while the body streams in). */
export const LAN_MAX_BODY_BYTES = 8 * 1024 * 1024;
/** Largest answer the client reads from a peer (results of a full batch fit easily). */
export const LAN_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
/** Largest body of the small endpoints (pairing, rotation). */
export const LAN_SMALL_BODY_BYTES = 64 * 1024;
/** Envelopes or receipts per call. */
export const LAN_MAX_BATCH = 200;
/** Rotation records per call. */
export const LAN_MAX_ROTATIONS = 50;
/** Signed calls per peer per minute. */
export const PEER_CALLS_PER_MINUTE = 600;
/** Unsigned calls that cost work (pairing hello and join, rotation, signed status) per client address per minute. */
export const OPEN_CALLS_PER_MINUTE = 20;
/** Rate-table entries kept (oldest evicted beyond it). */
export const RATE_TABLE_MAX = 10_000;
/** Open hello nonces kept by the daemon (oldest evicted beyond it). */
export const PAIR_NONCES_MAX = 64;
/** How long a hello nonce stays usable. */
export const PAIR_NONCE_TTL_MS = 10 * 60 * 1000;
/** Longest `?challenge=` on /v1/status. */
export const STATUS_CHALLENGE_MAX_CHARS = 128;
