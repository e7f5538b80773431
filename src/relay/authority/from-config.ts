// The enrolment authority a relay's config chooses (design §8): the host-key challenge unless
// `enrolment_authority` is "account-token". The account-token authority and its JWT library are
// loaded only then (docs/relay-operator.md "Memory").
import type { RelayConfig } from '../config.ts';
import type { EnrolmentAuthority } from './enrolment-authority.ts';
import { HostKeyAuthority } from './host-key.ts';

export async function authorityFromConfig(config: RelayConfig, nowMs: () => number): Promise<EnrolmentAuthority> {
  const settings = config.account_token;
  if (settings === undefined) return new HostKeyAuthority();
  const [{ AccountTokenAuthority }, { httpJwksFetch, JwksCache }] = await Promise.all([import('./account-token.ts'), import('./jwks-cache.ts')]);
  const keys = new JwksCache({ fetchJwks: httpJwksFetch(settings.token_jwks_url), nowMs });
  return new AccountTokenAuthority({ issuer: settings.token_issuer, audience: settings.token_audience, keys, nowMs });
}
