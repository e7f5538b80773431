// Who is calling (protocol.md §2): a v2 caller is found by x-mbx-key; a v1 caller by name among at
// most CROWDED_NAME_HOSTS live enrolments, whichever verifies. Any failure is the same refusal.
// The candidates are read in a read-only transaction; the signatures are checked after it, so that
// a check on a worker thread never holds the store's read queue.
import { isPublicKey } from '../../protocol/keys.ts';
import { relayHopTimeIsFresh, type RelayHopRequest } from '../../protocol/relay-hop.ts';
import { CROWDED_NAME_HOSTS } from '../config.ts';
import type { HopVerifier } from '../crypto/hop-verifier.ts';
import type { Enrolment, RelayReader } from '../store/relay-store.ts';
import { RelayError } from './relay-error.ts';

export interface HopHeaders {
  host?: string | undefined;
  key?: string | undefined;
  ts?: string | undefined;
  sig?: string | undefined;
}

export const badHop = (): RelayError => new RelayError(401, 'bad relay hop');

/** The live enrolments that may have signed this request (none when the hop is malformed or stale). */
export async function hopCandidates(tx: RelayReader, headers: HopHeaders, nowMs: number): Promise<Enrolment[]> {
  const { host, key, ts, sig } = headers;
  if (ts === undefined || sig === undefined || !relayHopTimeIsFresh(ts, nowMs)) return [];
  if (key !== undefined) {
    if (!isPublicKey(key)) return [];
    const enrolment = await tx.enrolments.get(key);
    return enrolment === null || enrolment.revokedAt !== null ? [] : [enrolment];
  }
  if (host === undefined || host === '') return [];
  const named = await tx.enrolments.liveByName(host, CROWDED_NAME_HOSTS + 1);
  return named.length > CROWDED_NAME_HOSTS ? [] : named;
}

/** The first candidate whose key signed the hop, or null. */
export async function hopSigner(verifier: HopVerifier, candidates: Enrolment[], headers: HopHeaders, request: RelayHopRequest): Promise<Enrolment | null> {
  const { ts, sig } = headers;
  if (ts === undefined) return null;
  const verdicts = await Promise.all(candidates.map((e) => verifier.verify({ publicKey: e.hostPubkey, request, ts, sig })));
  return candidates.find((_, index) => verdicts[index] === true) ?? null;
}
