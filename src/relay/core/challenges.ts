// Open enrolment challenges (protocol.md §3.2): in memory, one per key (a new one replaces it),
// single use, 5 minutes, at most MAX_OPEN_CHALLENGES open. A restart drops them; clients ask again.
import { randomBytes } from 'node:crypto';
import { toBase64Url } from '../../protocol/base64.ts';
import { CHALLENGE_LIFE_MS, MAX_OPEN_CHALLENGES } from '../config.ts';

interface OpenChallenge {
  challenge: string;
  expiresAt: number;
}

export class ChallengeTable {
  // Insertion order is age order: a replaced challenge is deleted and re-inserted at the end.
  readonly #open = new Map<string, OpenChallenge>();
  readonly #random: (n: number) => Uint8Array;

  constructor(random: (n: number) => Uint8Array = randomBytes) {
    this.#random = random;
  }

  /** A fresh challenge for `pubkey`, or null when the table is full of live challenges. */
  issue(pubkey: string, nowMs: number): string | null {
    this.#open.delete(pubkey);
    this.#dropExpired(nowMs);
    if (this.#open.size >= MAX_OPEN_CHALLENGES) return null;
    const challenge = toBase64Url(this.#random(16));
    this.#open.set(pubkey, { challenge, expiresAt: nowMs + CHALLENGE_LIFE_MS });
    return challenge;
  }

  /** Takes (and removes) the open challenge of `pubkey`, if one is live. */
  take(pubkey: string, nowMs: number): string | null {
    const open = this.#open.get(pubkey);
    if (open === undefined) return null;
    this.#open.delete(pubkey);
    return open.expiresAt > nowMs ? open.challenge : null;
  }

  get size(): number {
    return this.#open.size;
  }

  #dropExpired(nowMs: number): void {
    for (const [key, open] of this.#open) {
      if (open.expiresAt > nowMs) break;
      this.#open.delete(key);
    }
  }
}
