import type { EnrolmentAuthority, EnrolmentDecision } from './enrolment-authority.ts';

/**
 * The default authority of self-hosted relays: holding the host key (proven by the signed
 * challenge, which the core checks before asking) is enough. It proves no account.
 */
export class HostKeyAuthority implements EnrolmentAuthority {
  readonly name = 'host-key';
  readonly strength = 0;
  async authorize(): Promise<EnrolmentDecision> {
    return { ok: true, account: null, org: null };
  }
}

/** Strength of the authority that recorded an enrolment, by its stored name. */
export function authorityStrength(authorizedBy: string): number {
  return authorizedBy === 'host-key' ? 0 : 1;
}
