// A real relay on 127.0.0.1 (in this process, on a temporary store) with an injected clock, and
// hosts that talk to it through the real HTTP client. Records are built with the real protocol code.
import assert from 'node:assert/strict';
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
import { startRelayLeader, startRelayService, type RelayService, type RelayServiceOptions } from '../../src/relay/relay-service.ts';
import { RelayApi } from '../../src/host/relay-client/api.ts';
import { tempDir } from './processes.ts';
import { TestClock } from './clock.ts';
import { freshPostgresDatabase, testPostgres } from './postgres-test-cluster.ts';
import { roundRobinProxy } from './round-robin-proxy.ts';

/** What a test may set of the service beyond its store, clock and settings. */
type ServiceExtras = Partial<
  Pick<
    RelayServiceOptions,
    'authority' | 'maxLiveEnrolments' | 'heartbeatIntervalMs' | 'requestLog' | 'metricsBind' | 'pollSummaryTicker' | 'store' | 'lockCheckTicker' | 'heldPulls'
  >
>;

export interface TestRelayOptions extends ServiceExtras {
  dir?: string;
  clock?: TestClock;
  limits?: Partial<RelayLimits>;
  config?: Partial<Omit<RelayConfig, 'limits'>>;
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

/** The defaults with a test's settings and limits over them. */
export function testConfig(settings: TestRelayOptions['config'], limits: TestRelayOptions['limits']): RelayConfig {
  return { ...DEFAULT_CONFIG, ...settings, limits: { ...DEFAULT_CONFIG.limits, ...limits } };
}

/**
 * Which relay startTestRelay starts (env AGENTMBX_TEST_RELAY_SETUP, set by helpers/relay-conformance.ts
 * to run the relay's HTTP conformance tests against every configuration): `single` (default), one
 * process; `sqlite-workers`, a group's leader and two workers on one SQLite store (services in this
 * process, each with its own store connections, without node:cluster); `postgres-2`, two relays on one
 * PostgreSQL database. The last two answer behind one address (round-robin-proxy.ts).
 */
export type TestRelaySetup = 'single' | 'sqlite-workers' | 'postgres-2';

export const TEST_RELAY_SETUPS: readonly TestRelaySetup[] = ['single', 'sqlite-workers', 'postgres-2'];

function testRelaySetup(): TestRelaySetup {
  const setup = process.env['AGENTMBX_TEST_RELAY_SETUP'] ?? 'single';
  if (!(TEST_RELAY_SETUPS as readonly string[]).includes(setup))
    throw new Error(`AGENTMBX_TEST_RELAY_SETUP=${setup}: not one of ${TEST_RELAY_SETUPS.join(', ')}`);
  return setup as TestRelaySetup;
}

// started when the file loads, so that it serves the whole file and stops after its last test (a
// cluster first used inside a test would stop with that test)
if (testRelaySetup() === 'postgres-2') await testPostgres();

/** The PostgreSQL database of each store directory: a relay restarted on the same directory finds its store again. */
const postgresStores = new Map<string, string>();

async function postgresStoreOf(dir: string): Promise<string> {
  const known = postgresStores.get(dir);
  if (known !== undefined) return known;
  const database = await freshPostgresDatabase();
  if ('skip' in database) throw new Error(`AGENTMBX_TEST_RELAY_SETUP=postgres-2 needs PostgreSQL: ${database.skip}`);
  postgresStores.set(dir, database.url);
  return database.url;
}

/**
 * Test options of the tests that count one client address's enrolment calls to the exact limit: that
 * count is kept in each process's memory (docs/relay-operator.md "Several processes"), so they run
 * against one process only.
 */
export const PER_PROCESS_ENROLMENT_RATE = testRelaySetup() === 'single' ? {} : { skip: 'the per-address enrolment rate is counted per relay process' };

/** Test options of the tests that back up or restore the store directory: SQLite's tools (PostgreSQL's are pg_dump and pg_restore). */
export const SQLITE_STORE_ONLY = testRelaySetup() === 'postgres-2' ? { skip: 'relay backup and restore are for the SQLite store' } : {};

/** The relay service in this process on 127.0.0.1 (or the setup's processes behind one address), stopped after the test. */
export async function startTestRelay(options: TestRelayOptions = {}): Promise<TestRelay> {
  const { dir = tempDir('agentmbx-relay-'), clock = new TestClock(), limits, config: settings, port = 0, ...extras } = options;
  const config = testConfig(settings, limits);
  const log: string[] = [];
  const common = {
    storeDir: dir,
    bind: '127.0.0.1',
    config,
    env: {},
    nowMs: clock.nowMs,
    log: (line: string) => {
      log.push(line);
    },
    ...extras,
  };
  const setup = testRelaySetup();
  const closers: Array<() => Promise<void>> = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const close of closers.splice(0).reverse()) await close();
  };
  after(stop);
  if (setup === 'single') {
    const service = await startRelayService({ ...common, port });
    closers.push(() => service.close());
    return { service, url: service.url, dir, clock, log, stop };
  }
  const services: RelayService[] = [];
  if (setup === 'sqlite-workers') {
    const leader = await startRelayLeader({ ...common, port: 0 });
    closers.push(() => leader.close());
    for (let i = 0; i < 2; i += 1) services.push(await startRelayService({ ...common, port: 0, role: 'worker', workers: 2 }));
  } else {
    const store = await postgresStoreOf(dir);
    for (let i = 0; i < 2; i += 1) services.push(await startRelayService({ ...common, port: 0, store }));
  }
  for (const service of services) closers.push(() => service.close());
  const proxy = await roundRobinProxy(
    services.map((s) => s.url),
    port,
  );
  closers.push(() => proxy.close());
  return { service: services[0] as RelayService, url: proxy.url, dir, clock, log, stop };
}

export interface TestHost {
  name: string;
  key: SigningKey;
  enc: EncKeyPair;
  api: RelayApi;
}

/** What records are built from: a host's name and keys. */
export type HostKeys = Pick<TestHost, 'name' | 'key' | 'enc'>;

/** What the push helpers need: a host's keys and a way to push a batch (over HTTP, or straight to a core: relay-core-fixture.ts). */
export type PushingHost = HostKeys & { api: Pick<RelayApi, 'push'> };

export interface RelayAddress {
  url: string;
  clock: { nowMs: () => number };
}

/** A host's name with a signing key (new by default) and a new enc key. */
export function hostKeys(name: string, key: SigningKey = generateSigningKey()): HostKeys {
  return { name, key, enc: generateEncKeyPair() };
}

/** A host identity with a relay client of its own; not enrolled yet. */
export function testHost(relay: RelayAddress, name: string, key: SigningKey = generateSigningKey()): TestHost {
  return { ...hostKeys(name, key), api: new RelayApi({ baseUrl: relay.url, hostName: name, key, nowMs: relay.clock.nowMs }) };
}

export async function enrolledHost(relay: RelayAddress, name: string): Promise<TestHost> {
  const host = testHost(relay, name);
  const answer = await host.api.enrol();
  if (answer.status !== 200) throw new Error(`enrol ${name}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return host;
}

/** The wire text of a sealed, signed v3 envelope from `from` to an agent on `to`. */
export function sealedEnvelope(
  from: HostKeys,
  to: HostKeys,
  nowMs: number,
  subject = 'hello',
  body = 'secret body',
  id = newUlid(nowMs),
): { id: string; wire: string } {
  const unsigned: UnsignedEnvelopeV3 = {
    v: 3,
    id,
    ts: new Date(nowMs).toISOString(),
    from: `alice@${from.name}`,
    to: [`bob@${to.name}`],
    thread: id,
    reply_to: null,
    kind: 'message',
    subject,
    body,
    needs_reply: false,
    refs: [],
    meta: deriveMeta(body),
    authority: null,
    enc: null,
  };
  const signed = signEnvelope(sealEnvelopeBody(unsigned, to.enc.publicKey), from.name, from.key);
  return { id, wire: JSON.stringify(signed) };
}

export function envelopeItem(id: string, targets: Array<{ host: HostKeys; wire: string }>) {
  return { kind: 'envelope', item_id: id, targets: targets.map((t) => ({ host_pubkey: t.host.key.publicKey, wire_b64: toBase64(Buffer.from(t.wire)) })) };
}

/** The push item of a fresh sealed envelope from `from` to `to` (or of `envelope`), with the envelope's id and wire. */
export function envelopeItemTo(from: HostKeys, to: HostKeys, nowMs: number, envelope: { id: string; wire: string } = sealedEnvelope(from, to, nowMs)) {
  return { id: envelope.id, wire: envelope.wire, item: envelopeItem(envelope.id, [{ host: to, wire: envelope.wire }]) };
}

/** One item's answer in a push (protocol.md §3.3). */
export interface PushResult {
  item_id: string;
  status: string;
  targets: Array<{ host_pubkey: string; seq: number }>;
  accept?: Record<string, unknown>;
  sig?: string;
}

/** Pushes `item` alone: the batch must answer 200; returns the item's result. */
export async function pushOne(host: PushingHost, item: unknown): Promise<PushResult> {
  const answer = await host.api.push([item]);
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  const results = answer.body['results'] as PushResult[];
  assert.equal(results.length, 1);
  return results[0] as PushResult;
}

/** An envelope's push result, with the envelope's id and wire and the item pushed. */
export type PushedEnvelope = PushResult & ReturnType<typeof envelopeItemTo>;

/** Pushes a fresh sealed envelope from `from` to `to` (or `envelope`) alone. */
export async function pushEnvelope(
  from: PushingHost,
  to: HostKeys,
  nowMs: number,
  envelope: { id: string; wire: string } = sealedEnvelope(from, to, nowMs),
): Promise<PushedEnvelope> {
  const sent = envelopeItemTo(from, to, nowMs, envelope);
  return { ...(await pushOne(from, sent.item)), ...sent };
}

/** pushEnvelope that must be accepted; returns the seq the relay gave it. */
export async function pushAccepted(from: PushingHost, to: HostKeys, nowMs: number): Promise<number> {
  const result = await pushEnvelope(from, to, nowMs);
  assert.equal(result.status, 'accepted', JSON.stringify(result));
  return result.targets[0]?.seq ?? 0;
}

/** A delivery receipt item signed by `recipientHost` about message `msg`, for `senderHost`. */
export function receiptItem(recipientHost: HostKeys, senderHost: HostKeys, msg: string, state: ReceiptState, seq: number, nowMs: number) {
  const rec = { v: 1 as const, type: 'receipt' as const, msg, recipient: `bob@${recipientHost.name}`, state, at: new Date(nowMs).toISOString(), seq };
  const wire = receiptWire(signReceipt(rec, recipientHost.key));
  return { kind: 'receipt', item_id: receiptItemId(rec), targets: [{ host_pubkey: senderHost.key.publicKey, wire_b64: toBase64(Buffer.from(wire)) }] };
}

/** A v2 enc-key ad of `host` for its own enc key (or `encPub`), with its signature; 30 days of life by default. */
export function signedEncAd(
  host: HostKeys,
  iatMs: number,
  expMs = iatMs + ENC_AD_PUBLISH_LIFETIME_MS,
  encPub = host.enc.publicKey,
): { ad: EncAdV2; sig: string } {
  const ad: EncAdV2 = {
    v: 2,
    type: 'enc-ad',
    host: host.name,
    host_pubkey: host.key.publicKey,
    enc_pub: encPub,
    iat: new Date(iatMs).toISOString(),
    exp: new Date(expMs).toISOString(),
  };
  return { ad, sig: signEncAdV2(ad, host.key) };
}

/** A host rotation record from `oldKey` to `newKey`, signed by both (a fresh enc key). */
export function signedRotation(host: string, oldKey: SigningKey, newKey: SigningKey, nowMs: number): HostRotation {
  return signRotation(
    {
      v: 1,
      type: 'host-rotation',
      host,
      old_pub: oldKey.publicKey,
      new_pub: newKey.publicKey,
      new_enc_pub: generateEncKeyPair().publicKey,
      iat: new Date(nowMs).toISOString(),
    },
    oldKey,
    newKey,
  );
}
