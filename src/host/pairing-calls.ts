// Pairing seen from the joining host (B, protocol §5): `agentmbx join` calls the inviting host's
// daemon over the LAN; `peers remove` tells the peer with a signed POST /v1/unpair. The inviting
// side and the rules both share are core/pairing.ts.
import { isPlainObject } from '../protocol/validate.ts';
import { NAME_RE } from '../protocol/names.ts';
import { checkPairParty, newPairNonce, normalizePairToken, pairMac, pairTokenKey, pairTranscript, verifyPairMac } from '../protocol/pairing.ts';
import { errorText } from '../common/answer-error.ts';
import { DEFAULT_PORT } from './core/identity.ts';
import type { HostNode } from './core/node.ts';
import { normalizeAddr } from './core/peer-addr.ts';
import { checkEncAd, encAdOf, isOldBuildHello, OLD_BUILD_HINT, PairError, selfParty } from './core/pairing.ts';
import { fetchPeerEncKey, lanCall } from './transport/lan/client.ts';

/** How long `peers remove` waits for the peer to take its POST /v1/unpair (best effort). */
export const UNPAIR_NOTICE_TIMEOUT_MS = 3_000;

/** B's side: `agentmbx join <addr> <token>`. `myAddr` is how A will reach this host. Returns A's host name. */
export async function joinPeer(node: HostNode, addrInput: string, tokenInput: string, myAddr: string): Promise<string> {
  const token = normalizePairToken(tokenInput);
  if (token === null) throw new PairError('that is not a pairing token (XXXX-XXXX-XXXX)');
  // a bare host name (`join laptop …`) means the daemon's default port, not HTTP's 80
  const addr = normalizeAddr(/^[a-z]+:\/\//i.test(addrInput) || /:\d+$/.test(addrInput) ? addrInput : `${addrInput}:${DEFAULT_PORT}`);
  const hello = await lanCall(addr, 'GET', '/v1/pair/hello', undefined, null);
  if (hello.status !== 200) {
    if (!(await isAgentmbxHost(addr))) {
      throw new PairError(
        `${addr} is not an agentmbx host (it answered HTTP ${hello.status}): check the address; a host's daemon listens on port ${DEFAULT_PORT} unless set otherwise`,
        400,
        'unreachable',
      );
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
  const join = await lanCall(
    addr,
    'POST',
    '/v1/pair/join',
    {
      v: 1,
      ...b,
      addr: myAddr,
      nonce_a: a.nonce,
      mac: pairMac(tokenKey, 'join', transcript),
      enc: encAdOf(node),
    },
    null,
  );
  if (join.status !== 200 || !isPlainObject(join.body)) throw new PairError(`pairing with ${addr} failed: ${errorText(join)}`);
  if (!verifyPairMac(tokenKey, 'accept', transcript, join.body.mac)) throw new PairError(`${addr} did not prove it knows the token: not paired`);
  const enc = checkEncAd(join.body.enc, a.host, a.host_pubkey);
  node.store.peers.pin(
    { host: a.host, host_pubkey: a.host_pubkey, owner_pubkey: a.owner_pubkey, addr, enc_pub: enc?.enc_pub ?? null, enc_sig: enc?.sig ?? null },
    node.nowMs(),
  );
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
