// Checking the relay hop's signature (protocol.md §2), behind one interface so that the event loop
// can hand the work to worker threads (hop-verify-pool.ts) or do it itself (0 threads, and tests).
import { verifyRelayHopSignature, type RelayHopRequest } from '../../protocol/relay-hop.ts';

export interface HopCheck {
  /** the enrolled key the hop claims */
  publicKey: string;
  request: RelayHopRequest;
  ts: string;
  sig: unknown;
}

export interface HopVerifier {
  /** whether `check.sig` is `check.publicKey`'s signature of the request's hop string (time is checked apart) */
  verify(check: HopCheck): Promise<boolean>;
  /** checks posted and not yet answered */
  pending(): number;
  /** stops any threads; checks still waiting are answered on the event loop */
  close(): Promise<void>;
}

export function verifyHopInline(check: HopCheck): boolean {
  return verifyRelayHopSignature(check.publicKey, check.request, check.ts, check.sig);
}

/** Every check on the calling thread. */
export const INLINE_HOP_VERIFIER: HopVerifier = Object.freeze({
  verify: (check: HopCheck) => Promise.resolve(verifyHopInline(check)),
  pending: () => 0,
  close: () => Promise.resolve(),
});
