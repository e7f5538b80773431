// Open enrolment challenges (protocol.md §3.2): one per key (a new one replaces it), single use, 5
// minutes, at most MAX_OPEN_CHALLENGES open. A lone relay keeps them in memory (a restart drops
// them; clients ask again); the processes of a relay group keep them in the store, so that any of
// them accepts a challenge another issued.
import { randomBytes } from 'node:crypto';
import { toBase64Url } from '../../protocol/base64.ts';
import { CHALLENGE_LIFE_MS, MAX_OPEN_CHALLENGES } from '../config.ts';
import type { RelayStore } from '../store/relay-store.ts';
import { openChallenge, takeChallenge } from '../store/rules/challenges.ts';

/** Where the core opens and takes challenges. */
export interface Challenges {
  /** A fresh challenge for `pubkey`, or null when MAX_OPEN_CHALLENGES live challenges are open. */
  issue(pubkey: string, nowMs: number): Promise<string | null>;
  /** Takes (and removes) the open challenge of `pubkey`, if one is live. */
  take(pubkey: string, nowMs: number): Promise<string | null>;
}

interface OpenChallenge {
  challenge: string;
  expiresAt: number;
}

/** Challenge text: 16 random bytes, base64url. */
function newChallenge(random: (n: number) => Uint8Array): string {
  return toBase64Url(random(16));
}

export class ChallengeTable implements Challenges {
  // Insertion order is age order: a replaced challenge is deleted and re-inserted at the end.
  readonly #open = new Map<string, OpenChallenge>();
  readonly #random: (n: number) => Uint8Array;

  constructor(random: (n: number) => Uint8Array = randomBytes) {
    this.#random = random;
  }

  async issue(pubkey: string, nowMs: number): Promise<string | null> {
    this.#open.delete(pubkey);
    this.#dropExpired(nowMs);
    if (this.#open.size >= MAX_OPEN_CHALLENGES) return null;
    const challenge = newChallenge(this.#random);
    this.#open.set(pubkey, { challenge, expiresAt: nowMs + CHALLENGE_LIFE_MS });
    return challenge;
  }

  async take(pubkey: string, nowMs: number): Promise<string | null> {
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

/** Challenges in the store (one write transaction per issue and per take), for a relay of several processes. */
export function storeChallenges(store: RelayStore, random: (n: number) => Uint8Array = randomBytes): Challenges {
  return {
    issue(pubkey, nowMs) {
      const challenge = newChallenge(random);
      return store.transaction(async (tx) =>
        (await openChallenge(tx, pubkey, challenge, nowMs + CHALLENGE_LIFE_MS, nowMs, MAX_OPEN_CHALLENGES)) ? challenge : null,
      );
    },
    take: (pubkey, nowMs) => store.transaction((tx) => takeChallenge(tx, pubkey, nowMs)),
  };
}
