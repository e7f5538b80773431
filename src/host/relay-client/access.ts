// What a hosted relay (docs/hosted-relay.md) wants from this host besides the hop: an account token
// as `authorization: Bearer` on every signed call, and at enrolment the account-token proof (the
// token, the cloud key, the host key's certificate of it, the cloud key's signature over the
// challenge). Tokens come from the owner's token command and live in memory only, one cache per open
// node: never in the store, never in a log.
import { fingerprint } from '../../protocol/fingerprint.ts';
import type { SigningKey } from '../../protocol/keys.ts';
import { cloudKeyJwk, cloudKeyThumbprint, signCloudKeyCert, signCloudKeyPop, type CloudKeyJwk } from '../../protocol/records/cloud-key.ts';
import { ensureCloudKey } from '../core/identity.ts';
import type { HostNode } from '../core/node.ts';
import type { RelayRow } from '../store/relay-tables.ts';
import { runTokenCommand, TokenCache } from './token.ts';

/**
 * No token could be had: the message is "the token command failed: <one-line reason>" (or says that
 * the cloud key cannot be used), never a token.
 */
export class TokenCommandError extends Error {}

export interface AccountTokenProof {
  type: 'account-token';
  token: string;
  cloud_key: CloudKeyJwk;
  cloud_key_sig: string;
  cloud_pop: string;
}

/** The bearer token and enrol proof of one relay, for the host key the node holds now. */
export interface RelayAccess {
  /** the current token; throws TokenCommandError */
  bearer(): Promise<string>;
  /** the enrol proof answering `challenge`; throws TokenCommandError */
  proof(challenge: string): Promise<AccountTokenProof>;
}

interface NodeTokens {
  cache: TokenCache;
  cloudKey: SigningKey;
}

const perNode = new WeakMap<HostNode, NodeTokens>();

function tokensOf(node: HostNode): NodeTokens {
  let tokens = perNode.get(node);
  if (tokens === undefined) {
    tokens = { cache: new TokenCache(node.nowMs), cloudKey: ensureCloudKey(node.home) };
    perNode.set(node, tokens);
  }
  return tokens;
}

/**
 * The relay's access for this host, or null when no token command is set (a host-key relay). Nothing
 * runs until a token is asked for; every failure to get one (the command, the cloud key) is a
 * TokenCommandError, which the session shows as token-failed.
 */
export function relayAccess(node: HostNode, relay: Pick<RelayRow, 'url' | 'token_command'>): RelayAccess | null {
  const command = relay.token_command;
  if (command === null) return null;
  const bearer = async (): Promise<string> => {
    const { jwk, jkt } = await cloudKeyOf(node).catch((err: unknown) => {
      throw new TokenCommandError(`the cloud key cannot be used: ${err instanceof Error ? err.message : String(err)}`);
    });
    const env = {
      AGENTMBX_RELAY_URL: relay.url,
      AGENTMBX_HOST: node.config.host,
      AGENTMBX_HOST_FP: fingerprint(node.keys.hostKey.publicKey),
      AGENTMBX_CLOUD_JKT: jkt,
      AGENTMBX_CLOUD_KEY: JSON.stringify(jwk),
    };
    const run = await tokensOf(node).cache.get(JSON.stringify([command, env]), () => runTokenCommand({ command, env, nowMs: node.nowMs }));
    if (!run.ok) throw new TokenCommandError(`the token command failed: ${run.reason}`);
    return run.token.token;
  };
  return {
    bearer,
    async proof(challenge) {
      const token = await bearer(); // it loaded the cloud key: nothing below throws
      const { cloudKey } = tokensOf(node);
      const { jwk, jkt } = await cloudKeyOf(node);
      const hostKey = node.keys.hostKey;
      return {
        type: 'account-token',
        token,
        cloud_key: jwk,
        cloud_key_sig: signCloudKeyCert(hostKey, jkt),
        cloud_pop: signCloudKeyPop(cloudKey, challenge, hostKey.publicKey),
      };
    },
  };
}

/** Forgets this process's token (the relay refused it): the next call runs the command again. */
export function dropRelayToken(node: HostNode): void {
  perNode.get(node)?.cache.drop();
}

/** The public cloud key and its thumbprint (what tokens must carry as cnf.jkt); creates the key on first need (throws HomeError). */
export async function cloudKeyOf(node: HostNode): Promise<{ jwk: CloudKeyJwk; jkt: string }> {
  const jwk = cloudKeyJwk(tokensOf(node).cloudKey.publicKey);
  return { jwk, jkt: await cloudKeyThumbprint(jwk) };
}
