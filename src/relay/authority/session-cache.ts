// Verified access tokens of a hosted relay (design §8, docs/hosted-relay.md "Sessions"), cached by
// jti until their exp, so a hop does not verify a JWT every time. A session belongs to the one host
// key whose certified cloud key the token is bound to; the deny-list drops sessions at once.

/** Sessions held in memory; beyond it the oldest is dropped (its host's next hop verifies again). */
export const MAX_SESSIONS = 100_000;

export interface Session {
  jti: string;
  /** SHA-256 of the token text: another token reusing the jti is not this session */
  tokenHash: string;
  hostPubkey: string;
  /** the host key's fingerprint, as deny-list entries name it */
  hostFp: string;
  clientId: string;
  /** the cloud key thumbprint the token is bound to */
  jkt: string;
  /** the token's exp, in ms */
  expMs: number;
}

export class SessionCache {
  readonly #byJti = new Map<string, Session>();

  /** The live session of this token, or null (unknown, another token with the jti, or expired). */
  get(jti: string, tokenHash: string, nowMs: number): Session | null {
    const session = this.#byJti.get(jti);
    if (session === undefined || session.tokenHash !== tokenHash) return null;
    if (session.expMs <= nowMs) {
      this.#byJti.delete(jti);
      return null;
    }
    return session;
  }

  put(session: Session): void {
    this.#byJti.delete(session.jti);
    if (this.#byJti.size >= MAX_SESSIONS) {
      const oldest = this.#byJti.keys().next().value;
      if (oldest !== undefined) this.#byJti.delete(oldest);
    }
    this.#byJti.set(session.jti, session);
  }

  /** Drops every session of these host fingerprints or client ids; returns how many. */
  drop(hostFps: ReadonlySet<string>, clientIds: ReadonlySet<string>): number {
    let dropped = 0;
    for (const [jti, session] of this.#byJti) {
      if (hostFps.has(session.hostFp) || clientIds.has(session.clientId)) {
        this.#byJti.delete(jti);
        dropped += 1;
      }
    }
    return dropped;
  }

  get size(): number {
    return this.#byJti.size;
  }
}
