// v1 lookups by host name (design §2): a name resolves only when exactly one live enrolment
// carries it, or exactly one inside the caller's proven account; otherwise it is ambiguous.
import { CROWDED_NAME_HOSTS } from '../config.ts';
import type { Enrolment, RelayReader } from '../store/relay-store.ts';

export type V1Resolution = { found: Enrolment } | { found: null; why: 'unknown' | 'ambiguous' };

export async function resolveV1Name(tx: RelayReader, caller: Enrolment, hostName: string): Promise<V1Resolution> {
  const named = await tx.enrolments.liveByName(hostName, CROWDED_NAME_HOSTS + 1);
  if (named.length === 0) return { found: null, why: 'unknown' };
  // a crowded name is ambiguous for v1 whoever asks, so the answer never depends on enrolment order
  if (named.length > CROWDED_NAME_HOSTS) return { found: null, why: 'ambiguous' };
  const inAccount = caller.account === null ? [] : named.filter((e) => e.account === caller.account);
  const unique = inAccount.length === 1 ? inAccount[0] : named.length === 1 ? named[0] : undefined;
  return unique === undefined ? { found: null, why: 'ambiguous' } : { found: unique };
}
