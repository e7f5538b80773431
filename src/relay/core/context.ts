// What every part of the relay core works with: the store, the relay's key, its settings, the
// enrolment authority, an injected clock, and the bounded in-memory tables.
import type { SigningKey } from '../../protocol/keys.ts';
import type { ItemOutcomeCode } from '../../protocol/relay-api/item-results.ts';
import type { EnrolmentAuthority } from '../authority/enrolment-authority.ts';
import type { RelayConfig } from '../config.ts';
import type { HopVerifier } from '../crypto/hop-verifier.ts';
import type { RelayStore } from '../store/relay-store.ts';
import type { Challenges } from './challenges.ts';
import type { HostedRelay } from './hosted.ts';
import type { PushWriter } from './push-writes.ts';

/** What the core tells the relay's metrics, from its own outcomes (never parsed back from an answer). */
export interface CoreObserver {
  /** the outcome of each item of one push request */
  itemsPushed(outcomes: readonly ItemOutcomeCode[]): void;
}

export const SILENT_OBSERVER: CoreObserver = { itemsPushed() {} };

export interface CoreContext {
  store: RelayStore;
  relayKey: SigningKey;
  config: RelayConfig;
  authority: EnrolmentAuthority;
  /** the session and deny-list rules of a hosted relay (account-token authority), or null */
  hosted: HostedRelay | null;
  nowMs: () => number;
  version: string;
  /** the store's epoch, read at start; it changes only while no relay serves the store */
  epoch: string;
  challenges: Challenges;
  /** writes pushed items and counts the push rate (core/push-writes.ts) */
  pushWriter: PushWriter;
  /** live enrolments this relay admits (MAX_LIVE_ENROLMENTS unless a test sets it lower) */
  maxLiveEnrolments: number;
  /** checks hop signatures (on worker threads in a served relay) */
  hopVerifier: HopVerifier;
  observer: CoreObserver;
}

export { isoTime } from '../../common/time-text.ts';
