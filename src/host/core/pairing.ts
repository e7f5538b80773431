// Pairing by one-time token (protocol §5): the inviting host's (A's) side and the rules both sides
// share. A keeps only the token's scrypt key in its store, so the daemon answering hello/join sees
// what `pair` created; the joining host (B) calls it from the CLI (pairing-calls.ts).
import { signEncAdV1, verifyEncAdV1 } from '../../protocol/records/enc-ad.ts';
import { isPlainObject } from '../../protocol/validate.ts';
import { NAME_RE } from '../../protocol/names.ts';
import { checkPairJoin, newPairNonce, newPairToken, pairMac, pairTokenKey, pairTranscript, verifyPairMac, type PairParty } from '../../protocol/pairing.ts';
import { fromBase64 } from '../../protocol/base64.ts';
import { alertLocal } from './alerts.ts';
import { HostError, type FailureKind } from './host-error.ts';
import type { HostNode } from './node.ts';
import { OWNER } from './route.ts';
import type { PeerRow } from '../store/peers-table.ts';
import { normalizeAddr } from './peer-addr.ts';

/** Token life when `pair` gets no --ttl. */
export const PAIR_DEFAULT_TTL_MS = 10 * 60 * 1000;
/** Longest token life `pair` accepts. */
export const PAIR_MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** Wrong MACs that burn a token. */
export const PAIR_MAX_FAILURES = 5;

export class PairError extends HostError {
  readonly status: number;
  constructor(message: string, status = 400, kind: FailureKind | null = null) {
    super(message, kind);
    this.status = status;
  }
}

/** Creates the one live token (replacing any earlier one) and returns it; only its key is stored. */
export function createPairToken(node: HostNode, ttlMs: number, random?: (n: number) => Uint8Array): { token: string; expiresAt: number } {
  const token = newPairToken(random);
  const now = node.nowMs();
  node.store.pairTokens.create(pairTokenKey(token).toString('base64'), now + ttlMs, now);
  return { token, expiresAt: now + ttlMs };
}

/** This host as a pairing party. Our hosts keep no owner key: `owner_pubkey` is null (§5), never the host key. */
export function selfParty(node: HostNode, nonce: string): PairParty {
  return { host: node.config.host, host_pubkey: node.keys.hostKey.publicKey, owner_pubkey: null, nonce };
}

/** The refusal of a join whose body is not §5's shape (AgentMBX hosts read exactly this text). */
export const BAD_JOIN_REQUEST = 'bad join request';

/**
 * Builds of ours before the §5 correction named their host key as `owner_pubkey`, hashed the token
 * with its dashes and sent `a_nonce`: nothing they send pairs with this build. A hello naming the host
 * key as owner key comes from such a build (§5 forbids it to everyone else).
 */
export function isOldBuildHello(party: PairParty): boolean {
  return party.owner_pubkey === party.host_pubkey;
}

export const OLD_BUILD_HINT = 'runs an older agentmbx build whose pairing does not match this one: upgrade agentmbx there, then pair again';

export function encAdOf(node: HostNode): { v: 1; host: string; enc_pub: string; sig: string } {
  return { v: 1, host: node.config.host, enc_pub: node.keys.enc.publicKey, sig: signEncAdV1(node.config.host, node.keys.enc.publicKey, node.keys.hostKey) };
}

/** Open hello nonces of a daemon (A's side), capped and short-lived. */
export class PairNonces {
  readonly #max: number;
  readonly #ttlMs: number;
  readonly #open = new Map<string, number>();
  constructor(max: number, ttlMs: number) {
    this.#max = max;
    this.#ttlMs = ttlMs;
  }
  issue(nowMs: number): string {
    if (this.#open.size >= this.#max) {
      const oldest = this.#open.keys().next().value;
      if (oldest !== undefined) this.#open.delete(oldest);
    }
    const nonce = newPairNonce();
    this.#open.set(nonce, nowMs + this.#ttlMs);
    return nonce;
  }
  /** Uses a nonce up; false when it was never issued, already used or expired. */
  consume(nonce: string, nowMs: number): boolean {
    const expires = this.#open.get(nonce);
    this.#open.delete(nonce);
    return expires !== undefined && expires > nowMs;
  }
}

/** A's answer to GET /v1/pair/hello. */
export function pairHello(node: HostNode, nonces: PairNonces): PairParty & { v: 1 } {
  if (node.store.pairTokens.live(node.nowMs()) === undefined) throw new PairError('no pairing token is open on this host (run agentmbx pair there)', 404);
  return { v: 1, ...selfParty(node, nonces.issue(node.nowMs())) };
}

/** The enc-key ad a pairing party sent, when it is well formed and signed by `hostPubkey`. */
export function checkEncAd(x: unknown, host: string, hostPubkey: string): { enc_pub: string; sig: string } | null {
  if (!isPlainObject(x) || x.host !== host || typeof x.enc_pub !== 'string' || typeof x.sig !== 'string') return null;
  return verifyEncAdV1(host, x.enc_pub, x.sig, hostPubkey) ? { enc_pub: x.enc_pub, sig: x.sig } : null;
}

/**
 * A's side of POST /v1/pair/join (§5): 400 for a malformed body; 409 for B using this host's name
 * or a name paired here with another key; 401 for an unknown hello nonce, no live token or a wrong
 * MAC (five burn the token). B is pinned only after its MAC verified, then A answers its own MAC.
 */
export function pairAcceptJoin(
  node: HostNode,
  nonces: PairNonces,
  body: Record<string, unknown>,
): { v: 1; host: string; mac: string; enc: ReturnType<typeof encAdOf> } {
  const now = node.nowMs();
  const join = checkPairJoin(body);
  let bAddr: string | null = null;
  try {
    bAddr = join === null ? null : normalizeAddr(join.addr);
  } catch {
    // an address that is no URL is a malformed join like any other
  }
  if (join === null || bAddr === null || !NAME_RE.test(join.party.host)) throw new PairError(BAD_JOIN_REQUEST, 400);
  const b = join.party;
  if (b.host === node.config.host) throw new PairError("the joining host has this host's name: rename one of them", 409);
  const token = node.store.pairTokens.live(now);
  if (token === undefined) throw new PairError('no pairing token is open on this host (expired, used or burned)', 401);
  if (!nonces.consume(join.nonce_a, now)) throw new PairError('unknown or expired hello nonce: start again', 401);
  const tokenKey = fromBase64(token.token_key) ?? Buffer.alloc(0);
  const transcript = pairTranscript(selfParty(node, join.nonce_a), b, join.addr);
  if (!verifyPairMac(tokenKey, 'join', transcript, join.mac)) {
    const failures = node.store.pairTokens.noteFailure(token.id, PAIR_MAX_FAILURES);
    throw new PairError(failures >= PAIR_MAX_FAILURES ? 'wrong token: the token is now burned' : 'wrong token', 401);
  }
  const known = node.store.peers.get(b.host);
  if (known !== undefined && known.host_pubkey !== b.host_pubkey) {
    throw new PairError(`a host named ${b.host} is already paired here with another key: remove it there first (agentmbx peers remove ${b.host})`, 409);
  }
  if (!node.store.pairTokens.markUsed(token.id)) throw new PairError('the token was used meanwhile', 401);
  const enc = checkEncAd(body.enc, b.host, b.host_pubkey);
  node.store.peers.pin(
    { host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, addr: bAddr, enc_pub: enc?.enc_pub ?? null, enc_sig: enc?.sig ?? null },
    now,
  );
  return { v: 1, host: node.config.host, mac: pairMac(tokenKey, 'accept', transcript), enc: encAdOf(node) };
}

/** A paired peer's verified POST /v1/unpair: it removed us, so we remove it, and tell the owner. Returns the log line. */
export function acceptUnpair(node: HostNode, peer: PeerRow): string {
  node.store.peers.remove(peer.host);
  const line = `${peer.host} unpaired from this host (its signed /v1/unpair): its pinned keys are forgotten`;
  alertLocal(
    node,
    OWNER,
    `${peer.host} unpaired from this host`,
    `The host ${peer.host} removed its pairing with this host and told us so with a signed call, so this host removed ${peer.host} too. ` +
      `Mail still queued for it will not be delivered. To exchange mail again, pair the two hosts anew (agentmbx pair / agentmbx join).`,
    null,
  );
  return line;
}
