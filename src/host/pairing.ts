// Pairing by one-time token (protocol §5), both sides. The inviting host (A) keeps only the
// token's scrypt key in its store, so the daemon answering hello/join sees what `pair` created;
// the joining host (B) runs `join` from the CLI.
import { signEncAdV1, verifyEncAdV1 } from '../protocol/records/enc-ad.ts';
import { isPlainObject } from '../protocol/records/validate.ts';
import { NAME_RE } from '../protocol/names.ts';
import {
  checkPairJoin, checkPairParty, newPairNonce, newPairToken, normalizePairToken, pairMac, pairTokenKey, pairTranscript,
  verifyPairMac, type PairParty,
} from '../protocol/pairing.ts';
import { fromBase64 } from '../protocol/base64.ts';
import { alertLocal } from './core/alerts.ts';
import { HostError, type FailureKind } from './core/host-error.ts';
import { DEFAULT_PORT } from './core/identity.ts';
import type { HostNode } from './core/node.ts';
import { OWNER } from './core/route.ts';
import type { PeerRow } from './store/peers-table.ts';
import { normalizeAddr } from './core/peer-addr.ts';
import { fetchPeerEncKey, lanCall } from './transport/lan/client.ts';
import { errorText } from '../common/answer-error.ts';

/** Token life when `pair` gets no --ttl. */
export const PAIR_DEFAULT_TTL_MS = 10 * 60 * 1000;
/** Longest token life `pair` accepts. */
export const PAIR_MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** Wrong MACs that burn a token. */
export const PAIR_MAX_FAILURES = 5;
/** How long `peers remove` waits for the peer to take its POST /v1/unpair (best effort). */
export const UNPAIR_NOTICE_TIMEOUT_MS = 3_000;

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

const OLD_BUILD_HINT = 'runs an older agentmbx build whose pairing does not match this one: upgrade agentmbx there, then pair again';

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

function checkEncAd(x: unknown, host: string, hostPubkey: string): { enc_pub: string; sig: string } | null {
  if (!isPlainObject(x) || x.host !== host || typeof x.enc_pub !== 'string' || typeof x.sig !== 'string') return null;
  return verifyEncAdV1(host, x.enc_pub, x.sig, hostPubkey) ? { enc_pub: x.enc_pub, sig: x.sig } : null;
}

/**
 * A's side of POST /v1/pair/join (§5): 400 for a malformed body; 409 for B using this host's name
 * or a name paired here with another key; 401 for an unknown hello nonce, no live token or a wrong
 * MAC (five burn the token). B is pinned only after its MAC verified, then A answers its own MAC.
 */
export function pairAcceptJoin(node: HostNode, nonces: PairNonces, body: Record<string, unknown>): { v: 1; host: string; mac: string; enc: ReturnType<typeof encAdOf> } {
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
  if (b.host === node.config.host) throw new PairError('the joining host has this host\'s name: rename one of them', 409);
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
  node.store.peers.pin({ host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, addr: bAddr, enc_pub: enc?.enc_pub ?? null, enc_sig: enc?.sig ?? null }, now);
  return { v: 1, host: node.config.host, mac: pairMac(tokenKey, 'accept', transcript), enc: encAdOf(node) };
}

/** B's side: `agentmbx join <addr> <token>`. `myAddr` is how A will reach this host. Returns A's host name. */
export async function joinPeer(node: HostNode, addrInput: string, tokenInput: string, myAddr: string): Promise<string> {
  const token = normalizePairToken(tokenInput);
  if (token === null) throw new PairError('that is not a pairing token (XXXX-XXXX-XXXX)');
  // a bare host name (`join laptop …`) means the daemon's default port, not HTTP's 80
  const addr = normalizeAddr(/^[a-z]+:\/\//i.test(addrInput) || /:\d+$/.test(addrInput) ? addrInput : `${addrInput}:${DEFAULT_PORT}`);
  const hello = await lanCall(addr, 'GET', '/v1/pair/hello', undefined, null);
  if (hello.status !== 200) {
    if (!await isAgentmbxHost(addr)) {
      throw new PairError(`${addr} is not an agentmbx host (it answered HTTP ${hello.status}): check the address; a host's daemon listens on port ${DEFAULT_PORT} unless set otherwise`, 400, 'unreachable');
    }
    throw new PairError(`pairing with ${addr} failed: ${errorText(hello)}`);
  }
  const a = checkPairParty(hello.body);
  if (a === null || !NAME_RE.test(a.host)) throw new PairError(`${addr} did not answer a valid hello`);
  if (isOldBuildHello(a)) throw new PairError(`${addr} ${OLD_BUILD_HINT}`);
  if (a.host === node.config.host) throw new PairError(`${addr} has this host's own name "${a.host}": rename one of them`);
  const known = node.store.peers.get(a.host);
  if (known !== undefined && known.host_pubkey !== a.host_pubkey) {
    throw new PairError(`a host named ${a.host} is already paired here with another key: remove it first (agentmbx peers remove ${a.host})`, 409);
  }
  const tokenKey = pairTokenKey(token);
  const b = selfParty(node, newPairNonce());
  const transcript = pairTranscript(a, b, myAddr);
  const join = await lanCall(addr, 'POST', '/v1/pair/join', {
    v: 1, ...b, addr: myAddr, nonce_a: a.nonce, mac: pairMac(tokenKey, 'join', transcript), enc: encAdOf(node),
  }, null);
  if (join.status !== 200 || !isPlainObject(join.body)) throw new PairError(`pairing with ${addr} failed: ${errorText(join)}`);
  if (!verifyPairMac(tokenKey, 'accept', transcript, join.body.mac)) throw new PairError(`${addr} did not prove it knows the token: not paired`);
  const enc = checkEncAd(join.body.enc, a.host, a.host_pubkey);
  node.store.peers.pin({ host: a.host, host_pubkey: a.host_pubkey, owner_pubkey: a.owner_pubkey, addr, enc_pub: enc?.enc_pub ?? null, enc_sig: enc?.sig ?? null }, node.nowMs());
  if (enc === null) {
    const peer = node.store.peers.get(a.host);
    if (peer !== undefined) await fetchPeerEncKey(node, peer);
  }
  return a.host;
}

/** Whether `addr` answers /v1/status as an agentmbx host's daemon does (a relay or a web server does not). */
async function isAgentmbxHost(addr: string): Promise<boolean> {
  const status = await lanCall(addr, 'GET', '/v1/status', undefined, null);
  return status.status === 200 && isPlainObject(status.body) && typeof status.body.host === 'string' && typeof status.body.host_pubkey === 'string';
}

/** What `peers remove` did: the local removal, and whether the peer took our POST /v1/unpair. */
export interface Unpaired {
  host: string;
  peerTold: boolean;
  /** why the peer was not told (unreachable, refused), null when it was */
  detail: string | null;
}

/**
 * Unpairs `host` here, whatever happens next, then tells it with a signed POST /v1/unpair (§5),
 * bounded by `timeoutMs`: a peer that was not told keeps us pinned until its owner removes us.
 * Null when `host` is not paired.
 */
export async function unpairPeer(node: HostNode, host: string, timeoutMs = UNPAIR_NOTICE_TIMEOUT_MS): Promise<Unpaired | null> {
  const peer = node.store.peers.get(host);
  if (peer === undefined || !node.store.peers.remove(host)) return null;
  try {
    const answer = await lanCall(peer.addr, 'POST', '/v1/unpair', {}, node, timeoutMs);
    if (answer.status === 200) return { host, peerTold: true, detail: null };
    return { host, peerTold: false, detail: errorText(answer) };
  } catch (err) {
    return { host, peerTold: false, detail: err instanceof Error ? err.message : String(err) };
  }
}

/** A paired peer's verified POST /v1/unpair: it removed us, so we remove it, and tell the owner. Returns the log line. */
export function acceptUnpair(node: HostNode, peer: PeerRow): string {
  node.store.peers.remove(peer.host);
  const line = `${peer.host} unpaired from this host (its signed /v1/unpair): its pinned keys are forgotten`;
  alertLocal(node, OWNER, `${peer.host} unpaired from this host`,
    `The host ${peer.host} removed its pairing with this host and told us so with a signed call, so this host removed ${peer.host} too. `
    + `Mail still queued for it will not be delivered. To exchange mail again, pair the two hosts anew (agentmbx pair / agentmbx join).`, null);
  return line;
}
