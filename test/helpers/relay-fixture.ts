// A real relay on 127.0.0.1 (in this process, on a temporary store) with an injected clock, and
// hosts that talk to it through the real HTTP client. Records are built with the real protocol code.
import { after } from 'node:test';
import { toBase64 } from '../../src/protocol/base64.ts';
import { generateEncKeyPair, generateSigningKey, type EncKeyPair, type SigningKey } from '../../src/protocol/keys.ts';
import { ENC_AD_PUBLISH_LIFETIME_MS, signEncAdV2, type EncAdV2 } from '../../src/protocol/records/enc-ad.ts';
import { signEnvelope, type UnsignedEnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { deriveMeta } from '../../src/protocol/records/envelope-meta.ts';
import { receiptItemId, receiptWire, signReceipt, type ReceiptState } from '../../src/protocol/records/receipt.ts';
import { signRotation, type HostRotation } from '../../src/protocol/records/rotation.ts';
import { sealEnvelopeBody } from '../../src/protocol/seal.ts';
import { newUlid } from '../../src/protocol/ulid.ts';
import { DEFAULT_CONFIG, type RelayConfig, type RelayLimits } from '../../src/relay/config.ts';
import type { EnrolmentAuthority } from '../../src/relay/authority/enrolment-authority.ts';
import { startRelayService, type RelayService } from '../../src/relay/relay-service.ts';
import { RelayApi } from '../../src/host/transport/relay/relay-api.ts';
import { tempDir } from './processes.ts';

/** A settable clock: tests move time explicitly, never by sleeping. */
export class TestClock {
  ms: number;
  constructor(start = Date.UTC(2026, 11, 2, 12, 0, 0)) {
    this.ms = start;
  }
  now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface TestRelayOptions {
  dir?: string;
  clock?: TestClock;
  limits?: Partial<RelayLimits>;
  config?: Partial<Omit<RelayConfig, 'limits'>>;
  authority?: EnrolmentAuthority;
  maxLiveEnrolments?: number;
  /** a fixed port (a restarted relay at its old address); default: any free port */
  port?: number;
}

export interface TestRelay {
  service: RelayService;
  url: string;
  dir: string;
  clock: TestClock;
  /** the relay's own log lines (a failed sweep, a rotation at start): kept here, not on stderr, for tests to read */
  log: string[];
  stop(): Promise<void>;
}

export async function startTestRelay(options: TestRelayOptions = {}): Promise<TestRelay> {
  const dir = options.dir ?? tempDir('agentmbx-relay-');
  const clock = options.clock ?? new TestClock();
  const config: RelayConfig = { ...DEFAULT_CONFIG, ...options.config, limits: { ...DEFAULT_CONFIG.limits, ...options.limits } };
  const log: string[] = [];
  const service = await startRelayService({
    storeDir: dir, port: options.port ?? 0, bind: '127.0.0.1', config, env: {}, nowMs: clock.now, log: (line) => { log.push(line); },
    ...(options.authority ? { authority: options.authority } : {}),
    ...(options.maxLiveEnrolments === undefined ? {} : { maxLiveEnrolments: options.maxLiveEnrolments }),
  });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await service.close();
  };
  after(stop);
  return { service, url: service.url, dir, clock, log, stop };
}

export interface TestHost {
  name: string;
  key: SigningKey;
  enc: EncKeyPair;
  api: RelayApi;
}

export interface RelayAddress {
  url: string;
  clock: { now: () => number };
}

export function makeHost(relay: RelayAddress, name: string, key: SigningKey = generateSigningKey()): TestHost {
  return { name, key, enc: generateEncKeyPair(), api: new RelayApi({ baseUrl: relay.url, hostName: name, key, nowMs: relay.clock.now }) };
}

export async function enrolledHost(relay: RelayAddress, name: string): Promise<TestHost> {
  const host = makeHost(relay, name);
  const answer = await host.api.enrol();
  if (answer.status !== 200) throw new Error(`enrol ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return host;
}

/** The wire text of a sealed, signed v3 envelope from `from` to an agent on `to`. */
export function sealedEnvelope(from: TestHost, to: TestHost, nowMs: number, subject = 'hello', body = 'secret body', id = newUlid(nowMs)): { id: string; wire: string } {
  const unsigned: UnsignedEnvelopeV3 = {
    v: 3, id, ts: new Date(nowMs).toISOString(), from: `alice@${from.name}`, to: [`bob@${to.name}`], thread: id,
    reply_to: null, kind: 'message', subject, body, needs_reply: false, refs: [], meta: deriveMeta(body), authority: null, enc: null,
  };
  const signed = signEnvelope(sealEnvelopeBody(unsigned, to.enc.publicKey), from.name, from.key);
  return { id, wire: JSON.stringify(signed) };
}

export function envelopeItem(id: string, targets: Array<{ host: TestHost; wire: string }>) {
  return { kind: 'envelope', item_id: id, targets: targets.map((t) => ({ host_pubkey: t.host.key.publicKey, wire_b64: toBase64(Buffer.from(t.wire)) })) };
}

/** A delivery receipt item signed by `recipientHost` about message `msg`, for `senderHost`. */
export function receiptItem(recipientHost: TestHost, senderHost: TestHost, msg: string, state: ReceiptState, seq: number, nowMs: number) {
  const rec = { v: 1 as const, type: 'receipt' as const, msg, recipient: `bob@${recipientHost.name}`, state, at: new Date(nowMs).toISOString(), seq };
  const wire = receiptWire(signReceipt(rec, recipientHost.key));
  return { kind: 'receipt', item_id: receiptItemId(rec), targets: [{ host_pubkey: senderHost.key.publicKey, wire_b64: toBase64(Buffer.from(wire)) }] };
}

/** A v2 enc-key ad of `host` for its own enc key (or `encPub`), with its signature; 30 days of life by default. */
export function signedEncAd(host: TestHost, iatMs: number, expMs = iatMs + ENC_AD_PUBLISH_LIFETIME_MS, encPub = host.enc.publicKey): { ad: EncAdV2; sig: string } {
  const ad: EncAdV2 = { v: 2, type: 'enc-ad', host: host.name, host_pubkey: host.key.publicKey, enc_pub: encPub, iat: new Date(iatMs).toISOString(), exp: new Date(expMs).toISOString() };
  return { ad, sig: signEncAdV2(ad, host.key) };
}

/** A host rotation record from `oldKey` to `newKey`, signed by both (a fresh enc key). */
export function signedRotation(host: string, oldKey: SigningKey, newKey: SigningKey, nowMs: number): HostRotation {
  return signRotation({
    v: 1, type: 'host-rotation', host, old_pub: oldKey.publicKey, new_pub: newKey.publicKey,
    new_enc_pub: generateEncKeyPair().publicKey, iat: new Date(nowMs).toISOString(),
  }, oldKey, newKey);
}
