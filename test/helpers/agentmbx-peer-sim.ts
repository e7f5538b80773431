// A simulated AgentMBX host for tests, written from protocol.md §5 alone (the host-to-host wire as
// real AgentMBX 0.5.x hosts speak it), not from any implementation's code. It pairs in both roles
// by one-time token, signs and checks the LAN hop, and serves and calls every §5 endpoint in the §5
// shapes: envelopes `{id, result}`, receipts and rotations bare strings. The §5 logic (token key,
// transcript, MACs, hop, answers) is written here with node:crypto; records (§4 envelopes and
// receipts, the rotation record, canonical JSON, Ed25519) use the project's primitives.
//
// `oldShapes` makes it answer as older builds of ours did (`{id, status}` for every batch route), to
// prove our client still reads them.
import { createHash, createHmac, hkdfSync, randomBytes, scryptSync, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { generateEncKeyPair, generateSigningKey, verifySignature, type EncKeyPair, type SigningKey } from '../../src/protocol/keys.ts';
import { checkEnvelopeShape, signEnvelope, verifyEnvelope, type UnsignedEnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { checkReceiptShape, receiptRank, signReceipt, type DeliveryReceipt } from '../../src/protocol/records/receipt.ts';
import { checkRotation, rotationItemId, signRotation } from '../../src/protocol/records/rotation.ts';
import { openEnvelopeBody, sealEnvelopeBody } from '../../src/protocol/seal.ts';
import { newUlid } from '../../src/protocol/ulid.ts';

const PROTO = 'agentmbx-pair-token-v1';
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const MAX_BODY = 1024 * 1024;

export interface SimPeerRow {
  host: string;
  host_pubkey: string;
  owner_pubkey: string | null;
  addr: string;
  enc_pub: string | null;
}

interface Party {
  host: string;
  host_pubkey: string;
  owner_pubkey: string | null;
  nonce: string;
}

export interface PeerSim {
  host: string;
  url: string;
  key: SigningKey;
  enc: EncKeyPair;
  ownerPubkey: string | null;
  /** answer as older builds of ours did: `{id, status}` on every batch route */
  oldShapes: boolean;
  peers: Map<string, SimPeerRow>;
  /** envelopes taken, by id, with their opened body */
  received: Map<string, { from: string; subject: string; body: string }>;
  /** the highest receipt taken per `msg|recipient` for mail the sim sent */
  receipts: Map<string, { state: string; seq: number }>;
  /** every request's `METHOD path`, in order */
  calls: string[];
  /** opens a token (replacing any open one); returns it as shown, XXXX-XXXX-XXXX */
  openToken(): string;
  /** `join <addr> <token>`: pairs with the host at `addr` */
  join(addr: string, token: string): Promise<void>;
  /** a signed, sealed envelope to `to` (name@host of a paired peer); the peer's `result` */
  send(to: string, subject: string, body: string): Promise<{ id: string; result: unknown }>;
  /** a signed receipt for mail the sim received; the peer's bare-string answer */
  sendReceipt(msg: string, recipient: string, state: DeliveryReceipt['state'], seq: number): Promise<unknown>;
  /** rotates the sim's host and enc keys, posting the record to every peer; the answers by host */
  rotate(): Promise<Record<string, unknown>>;
  /** tells `host` it was unpaired (and forgets it); the HTTP status */
  unpair(host: string): Promise<number>;
}

class SimHttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const b64url = (buf: Buffer): string => buf.toString('base64url');
const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** §5: upper case, spaces and dashes removed, I/L → 1, O → 0; exactly 12 Crockford characters. */
function normaliseToken(input: string): string | null {
  const chars = input.toUpperCase().replace(/[\s-]/g, '').replace(/[IL]/g, '1').replace(/O/g, '0');
  return chars.length === 12 && [...chars].every((c) => CROCKFORD.includes(c)) ? chars : null;
}

/** §5: scrypt over the 12 normalised characters without dashes. */
function tokenKey(normalised: string): Buffer {
  return scryptSync(normalised, PROTO, 32, { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 });
}

function transcript(a: Party, b: Party, bAddr: string): string {
  return canonicalJson({
    proto: PROTO,
    a: { host: a.host, host_pubkey: a.host_pubkey, owner_pubkey: a.owner_pubkey, nonce: a.nonce },
    b: { host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, nonce: b.nonce, addr: bAddr },
  });
}

function mac(key: Buffer, label: 'join' | 'accept', text: string): string {
  const macKey = Buffer.from(hkdfSync('sha256', key, PROTO, `mac:${label}`, 32));
  return b64url(createHmac('sha256', macKey).update(`${label}\n${text}`, 'utf8').digest());
}

function macMatches(expected: string, given: unknown): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(expected, 'base64url');
  const b = Buffer.from(given, 'base64url');
  return a.length === b.length && timingSafeEqual(a, b);
}

function hopString(method: string, path: string, ts: string, body: string): string {
  return [method, path.split('?')[0], ts, sha256Hex(body)].join('\n');
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new SimHttpError(413, 'request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function startPeerSim(options: { host: string; ownerPubkey?: string | null }): Promise<PeerSim> {
  const startedAt = new Date().toISOString();
  let token: { key: Buffer; failures: number } | null = null;
  const helloNonces = new Set<string>();

  const sim: PeerSim = {
    host: options.host,
    url: '',
    key: generateSigningKey(),
    enc: generateEncKeyPair(),
    ownerPubkey: options.ownerPubkey ?? null,
    oldShapes: false,
    peers: new Map(),
    received: new Map(),
    receipts: new Map(),
    calls: [],
    openToken,
    join,
    send,
    sendReceipt,
    rotate,
    unpair,
  };
  const sent = new Map<string, string>(); // msg id → peer host, for receipts

  function self(nonce: string): Party {
    return { host: sim.host, host_pubkey: sim.key.publicKey, owner_pubkey: sim.ownerPubkey, nonce };
  }

  function openToken(): string {
    const chars = [...randomBytes(12)].map((b) => CROCKFORD.charAt(b & 31)).join('');
    token = { key: tokenKey(chars), failures: 0 };
    return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
  }

  async function call(addr: string, method: 'GET' | 'POST', path: string, body: unknown, signed: boolean): Promise<{ status: number; body: unknown }> {
    const raw = body === undefined ? '' : JSON.stringify(body);
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    if (signed) {
      const ts = new Date().toISOString();
      Object.assign(headers, { 'x-mbx-host': sim.host, 'x-mbx-ts': ts, 'x-mbx-sig': sim.key.sign(hopString(method, path, ts, raw)) });
    }
    const res = await fetch(addr + path, { method, headers, ...(body === undefined ? {} : { body: raw }), signal: AbortSignal.timeout(10_000) });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: parsed };
  }

  async function fetchEncKey(peer: SimPeerRow): Promise<string> {
    const answer = await call(peer.addr, 'GET', '/v1/enc-key', undefined, true);
    const b = answer.body;
    if (
      !isObject(b) ||
      b.host !== peer.host ||
      typeof b.enc_pub !== 'string' ||
      !verifySignature(peer.host_pubkey, canonicalJson({ v: 1, host: peer.host, enc_pub: b.enc_pub }), b.sig)
    ) {
      throw new Error(`sim: ${peer.host} answered no enc key signed by its pinned key (${answer.status})`);
    }
    peer.enc_pub = b.enc_pub;
    return b.enc_pub;
  }

  async function join(addr: string, typed: string): Promise<void> {
    const normalised = normaliseToken(typed);
    if (normalised === null) throw new Error('sim: not a token');
    const hello = await call(addr, 'GET', '/v1/pair/hello', undefined, false);
    const a = hello.body;
    if (
      hello.status !== 200 ||
      !isObject(a) ||
      typeof a.host !== 'string' ||
      typeof a.host_pubkey !== 'string' ||
      typeof a.nonce !== 'string' ||
      !(a.owner_pubkey === null || typeof a.owner_pubkey === 'string')
    ) {
      throw new Error(`sim: no valid hello from ${addr} (${hello.status})`);
    }
    const aParty: Party = { host: a.host, host_pubkey: a.host_pubkey, owner_pubkey: a.owner_pubkey, nonce: a.nonce };
    const b = self(b64url(randomBytes(16)));
    const text = transcript(aParty, b, sim.url);
    const key = tokenKey(normalised);
    const answer = await call(addr, 'POST', '/v1/pair/join', { v: 1, ...b, addr: sim.url, nonce_a: aParty.nonce, mac: mac(key, 'join', text) }, false);
    if (answer.status !== 200 || !isObject(answer.body)) throw new Error(`sim: join refused (${answer.status}): ${JSON.stringify(answer.body)}`);
    if (!macMatches(mac(key, 'accept', text), answer.body.mac)) throw new Error('sim: the accept MAC does not verify');
    const peer: SimPeerRow = { host: aParty.host, host_pubkey: aParty.host_pubkey, owner_pubkey: aParty.owner_pubkey, addr, enc_pub: null };
    sim.peers.set(peer.host, peer);
    await fetchEncKey(peer);
  }

  function peerOf(host: string): SimPeerRow {
    const peer = sim.peers.get(host);
    if (peer === undefined) throw new Error(`sim: ${host} is not paired`);
    return peer;
  }

  async function send(to: string, subject: string, body: string): Promise<{ id: string; result: unknown }> {
    const host = to.split('@')[1] ?? '';
    const peer = peerOf(host);
    const encPub = peer.enc_pub ?? (await fetchEncKey(peer));
    const id = newUlid(Date.now());
    const unsigned: UnsignedEnvelopeV3 = {
      v: 3,
      id,
      ts: new Date().toISOString(),
      from: `sam@${sim.host}`,
      to: [to],
      thread: id,
      reply_to: null,
      kind: 'message',
      subject,
      body,
      needs_reply: false,
      refs: [],
      meta: { mentions: [], directives: [], tags: [], task_refs: [] },
      authority: null,
      enc: null,
    };
    const envelope = signEnvelope(sealEnvelopeBody(unsigned, encPub), sim.host, sim.key);
    sent.set(id, host);
    const answer = await call(peer.addr, 'POST', '/v2/envelopes', { envelopes: [envelope] }, true);
    const results = isObject(answer.body) && Array.isArray(answer.body.results) ? answer.body.results : [];
    const first: unknown = results[0];
    return { id, result: isObject(first) && first.id === id ? first.result : undefined };
  }

  async function sendReceipt(msg: string, recipient: string, state: DeliveryReceipt['state'], seq: number): Promise<unknown> {
    const from = [...sim.peers.values()].find((p) => sim.received.get(msg)?.from.endsWith(`@${p.host}`));
    if (from === undefined) throw new Error(`sim: no received message ${msg}`);
    const rec: DeliveryReceipt = { v: 1, type: 'receipt', msg, recipient, state, at: new Date().toISOString(), seq };
    const answer = await call(from.addr, 'POST', '/v1/receipts', { receipts: [signReceipt(rec, sim.key)] }, true);
    return isObject(answer.body) && Array.isArray(answer.body.results) ? answer.body.results[0] : undefined;
  }

  async function rotate(): Promise<Record<string, unknown>> {
    const newKey = generateSigningKey();
    const newEnc = generateEncKeyPair();
    const record = signRotation(
      {
        v: 1,
        type: 'host-rotation',
        host: sim.host,
        old_pub: sim.key.publicKey,
        new_pub: newKey.publicKey,
        new_enc_pub: newEnc.publicKey,
        iat: new Date().toISOString(),
      },
      sim.key,
      newKey,
    );
    sim.key = newKey;
    sim.enc = newEnc;
    const out: Record<string, unknown> = {};
    for (const peer of sim.peers.values()) {
      const answer = await call(peer.addr, 'POST', '/v1/rotate', { records: [record] }, false);
      out[peer.host] = isObject(answer.body) && Array.isArray(answer.body.results) ? answer.body.results[0] : undefined;
    }
    return out;
  }

  async function unpair(host: string): Promise<number> {
    const peer = peerOf(host);
    sim.peers.delete(host);
    return (await call(peer.addr, 'POST', '/v1/unpair', {}, true)).status;
  }

  // ---- the served side ----

  function verifyHop(req: IncomingMessage, path: string, raw: string): SimPeerRow {
    const host = req.headers['x-mbx-host'];
    const ts = req.headers['x-mbx-ts'];
    const sig = req.headers['x-mbx-sig'];
    const peer = typeof host === 'string' ? sim.peers.get(host) : undefined;
    const time = typeof ts === 'string' ? Date.parse(ts) : NaN;
    if (
      peer === undefined ||
      typeof ts !== 'string' ||
      !Number.isFinite(time) ||
      Math.abs(time - Date.now()) > 5 * 60_000 ||
      !verifySignature(peer.host_pubkey, hopString(req.method ?? '', path, ts, raw), sig)
    ) {
      throw new SimHttpError(401, 'bad hop');
    }
    return peer;
  }

  function acceptJoin(body: unknown): unknown {
    const b = body;
    if (
      !isObject(b) ||
      b.v !== 1 ||
      typeof b.host !== 'string' ||
      !/^[a-z0-9][a-z0-9-]{1,39}$/.test(b.host) ||
      typeof b.host_pubkey !== 'string' ||
      !(b.owner_pubkey === null || typeof b.owner_pubkey === 'string') ||
      typeof b.nonce !== 'string' ||
      typeof b.addr !== 'string' ||
      typeof b.nonce_a !== 'string' ||
      typeof b.mac !== 'string'
    ) {
      throw new SimHttpError(400, 'bad join request');
    }
    if (b.host === sim.host) throw new SimHttpError(409, 'same host name');
    const known = sim.peers.get(b.host);
    if (known !== undefined && known.host_pubkey !== b.host_pubkey) throw new SimHttpError(409, 'that name is paired with another key');
    if (!helloNonces.delete(b.nonce_a) || token === null) throw new SimHttpError(401, 'unknown hello nonce or no live token');
    const bParty: Party = { host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, nonce: b.nonce };
    const text = transcript(self(b.nonce_a), bParty, b.addr);
    if (!macMatches(mac(token.key, 'join', text), b.mac)) {
      token.failures += 1;
      if (token.failures >= 5) token = null;
      throw new SimHttpError(401, 'wrong token');
    }
    const key = token.key;
    token = null;
    sim.peers.set(b.host, { host: b.host, host_pubkey: b.host_pubkey, owner_pubkey: b.owner_pubkey, addr: b.addr, enc_pub: null });
    return { v: 1, host: sim.host, mac: mac(key, 'accept', text) };
  }

  function takeEnvelope(peer: SimPeerRow, x: unknown): string {
    const shape = checkEnvelopeShape(x);
    if (!shape.ok) return `rejected:bad envelope: ${shape.reason}`;
    const env = shape.envelope;
    if (env.sig.host !== peer.host || !env.from.endsWith(`@${peer.host}`) || !verifyEnvelope(env, peer.host_pubkey)) return 'rejected:bad signature';
    if (sim.received.has(env.id)) return 'duplicate';
    const body = openEnvelopeBody(env, [sim.enc.privateKey]);
    if (body === null) return 'rejected:cannot open the body';
    sim.received.set(env.id, { from: env.from, subject: env.subject, body });
    return 'accepted';
  }

  function takeReceipt(peer: SimPeerRow, x: unknown): string {
    const rec = isObject(x) ? checkReceiptShape(x.rec) : null;
    if (rec === null || !isObject(x) || !verifySignature(peer.host_pubkey, canonicalJson(rec), x.sig)) return 'rejected:bad receipt';
    if (sent.get(rec.msg) !== peer.host) return 'rejected:not mail this host sent to that host';
    const key = `${rec.msg}|${rec.recipient}`;
    const held = sim.receipts.get(key);
    // §4.2: the highest state wins, then the higher seq at equal rank
    const order = held === undefined ? 1 : receiptRank(rec.state) - receiptRank(held.state) || rec.seq - held.seq;
    if (order === 0) return 'duplicate';
    if (order < 0) return 'stale';
    sim.receipts.set(key, { state: rec.state, seq: rec.seq });
    return 'accepted';
  }

  function takeRotation(x: unknown): string {
    const check = checkRotation(x);
    if (!check.ok) return `rejected:${check.reason}`;
    const rec = check.rotation.rec;
    const peer = sim.peers.get(rec.host);
    if (peer === undefined) return 'rejected:not paired';
    if (peer.host_pubkey === rec.new_pub) return 'current';
    if (peer.host_pubkey !== rec.old_pub) return 'rejected:old key is not the pinned key';
    peer.host_pubkey = rec.new_pub;
    peer.enc_pub = rec.new_enc_pub;
    return 'rotated';
  }

  /** `results[i]` for the i-th element: §5's shape, or (oldShapes) our older `{id, status}`. */
  function batch(list: unknown, take: (x: unknown) => string, idOf: (x: unknown) => string | null, envelopes: boolean): unknown {
    if (!Array.isArray(list)) throw new SimHttpError(400, 'no list');
    // our older builds answered a rotation `accepted` (now `rotated`) or `duplicate` (now `current`)
    const older = (result: string): string => (result === 'rotated' ? 'accepted' : result === 'current' ? 'duplicate' : result);
    if (sim.oldShapes) return { results: list.map((x) => ({ id: idOf(x), status: older(take(x)) })) };
    return { results: list.map((x) => (envelopes ? { id: idOf(x), result: take(x) } : take(x))) };
  }

  const envelopeId = (x: unknown): string | null => (isObject(x) && typeof x.id === 'string' ? x.id : null);
  const receiptId = (x: unknown): string | null => {
    const rec = isObject(x) && isObject(x.rec) ? x.rec : null;
    return rec === null ? null : `receipt:${String(rec.msg)}:${String(rec.recipient)}:${String(rec.seq)}`;
  };
  const rotationId = (x: unknown): string | null => {
    const check = checkRotation(x);
    return check.ok ? rotationItemId(check.rotation.rec) : null;
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    sim.calls.push(`${method} ${path}`);
    const raw = await readBody(req);
    const json = (): unknown => {
      try {
        return raw === '' ? {} : JSON.parse(raw);
      } catch {
        throw new SimHttpError(400, 'not JSON');
      }
    };
    let answer: unknown;
    let status = 200;
    const route = `${method} ${path}`;
    if (route === 'GET /v1/status') {
      answer = { service: 'agentmbx', v: 1, host: sim.host, host_pubkey: sim.key.publicKey, version: '0.5.6-sim', started_at: startedAt };
    } else if (route === 'GET /v1/pair/hello') {
      if (token === null) throw new SimHttpError(404, 'no pairing token');
      const nonce = b64url(randomBytes(16));
      helloNonces.add(nonce);
      answer = { v: 1, ...self(nonce) };
    } else if (route === 'POST /v1/pair/join') {
      answer = acceptJoin(json());
    } else if (route === 'POST /v1/rotate') {
      const body = json();
      answer = batch(isObject(body) ? body.records : null, takeRotation, rotationId, false);
    } else {
      const peer = verifyHop(req, path, raw);
      const body = json();
      const field = (name: string): unknown => (isObject(body) ? body[name] : undefined);
      if (route === 'POST /v2/envelopes' || route === 'POST /v1/envelopes') answer = batch(field('envelopes'), (x) => takeEnvelope(peer, x), envelopeId, true);
      else if (route === 'POST /v1/receipts') answer = batch(field('receipts'), (x) => takeReceipt(peer, x), receiptId, false);
      else if (route === 'GET /v1/enc-key')
        answer = { v: 1, host: sim.host, enc_pub: sim.enc.publicKey, sig: sim.key.sign(canonicalJson({ v: 1, host: sim.host, enc_pub: sim.enc.publicKey })) };
      else if (route === 'GET /v1/agents') answer = { host: sim.host, agents: [{ name: 'sam', role: null, cli: null, description: null, last_seen: null }] };
      else if (route === 'POST /v1/presence') [status, answer] = [202, { ok: true }];
      else if (route === 'POST /v1/unpair') {
        sim.peers.delete(peer.host);
        answer = { ok: true };
      } else throw new SimHttpError(404, 'not found');
    }
    const text = JSON.stringify(answer);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof SimHttpError ? err.status : 500;
      const text = JSON.stringify({ error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json' }).end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sim.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return sim;
}
