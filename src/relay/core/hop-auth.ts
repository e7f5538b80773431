// Who is calling (protocol.md §2): a v2 caller is found by x-mbx-key; a v1 caller by name among at
// most CROWDED_NAME_HOSTS live enrolments, whichever verifies. Any failure is the same refusal.
import { isPublicKey } from '../../protocol/keys.ts';
import { relayHopTimeIsFresh, verifyRelayHopSignature, type RelayHopRequest } from '../../protocol/relay-hop.ts';
import { CROWDED_NAME_HOSTS } from '../config.ts';
import type { Enrolment, RelayTx } from '../store/relay-store.ts';
import { RelayError } from './relay-error.ts';

export interface HopHeaders {
  host?: string | undefined;
  key?: string | undefined;
  ts?: string | undefined;
  sig?: string | undefined;
}

export const badHop = (): RelayError => new RelayError(401, 'bad relay hop');

/** The live enrolment that signed this request, or null. */
export async function findHopCaller(tx: RelayTx, headers: HopHeaders, request: RelayHopRequest, nowMs: number): Promise<Enrolment | null> {
  const { host, key, ts, sig } = headers;
  if (ts === undefined || sig === undefined || !relayHopTimeIsFresh(ts, nowMs)) return null;
  if (key !== undefined) {
    if (!isPublicKey(key)) return null;
    const enrolment = await tx.getEnrolment(key);
    if (enrolment === null || enrolment.revokedAt !== null) return null;
    return verifyRelayHopSignature(key, request, ts, sig) ? enrolment : null;
  }
  if (host === undefined || host === '') return null;
  const named = await tx.liveEnrolmentsByName(host, CROWDED_NAME_HOSTS + 1);
  if (named.length > CROWDED_NAME_HOSTS) return null;
  return named.find((e) => verifyRelayHopSignature(e.hostPubkey, request, ts, sig)) ?? null;
}
