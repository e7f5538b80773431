// The enrolment authority a relay's config chooses (design §8): the host-key challenge unless
// `enrolment_authority` is "account-token".
import type { RelayConfig } from '../config.ts';
import { AccountTokenAuthority } from './account-token.ts';
import type { EnrolmentAuthority } from './enrolment-authority.ts';
import { HostKeyAuthority } from './host-key.ts';
import { httpJwksFetch, JwksCache } from './jwks-cache.ts';

export function authorityFromConfig(config: RelayConfig, nowMs: () => number): EnrolmentAuthority {
  const settings = config.account_token;
  if (settings === undefined) return new HostKeyAuthority();
  const keys = new JwksCache({ fetchJwks: httpJwksFetch(settings.token_jwks_url), nowMs });
  return new AccountTokenAuthority({ issuer: settings.token_issuer, audience: settings.token_audience, keys, nowMs });
}
