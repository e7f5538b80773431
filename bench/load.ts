// The load generator: hosts enrolled on the relay under test and concurrent clients in this process,
// each call signed with the relay hop like a real host's. Items are shape-valid sealed v3 envelopes
// of just under 1 KiB of wire; one is sealed and signed per (sender, target) pair and then re-issued
// under fresh ids (the relay checks an envelope's shape and seal, not its signature).
import { toBase64 } from '../src/protocol/base64.ts';
import { generateEncKeyPair, generateSigningKey, type EncKeyPair, type SigningKey } from '../src/protocol/keys.ts';
import { signEnvelope, type UnsignedEnvelopeV3 } from '../src/protocol/records/envelope.ts';
import { deriveMeta } from '../src/protocol/records/envelope-meta.ts';
import { sealEnvelopeBody } from '../src/protocol/seal.ts';
import { newUlid } from '../src/protocol/ulid.ts';
import { RelayApi } from '../src/host/relay-client/api.ts';
import { BenchClient, type PreparedCall } from './bench-client.ts';

export interface Host {
  name: string;
  api: BenchClient;
  key: SigningKey;
  publicKey: string;
  enc: EncKeyPair;
}

export interface PhaseResult {
  items: number;
  seconds: number;
  itemsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** CPU (user + system ms) this process, the load generator, spent while the phase's clock ran */
  loadCpuMs: number;
}

/** Whom an item is for: a host's name and key, and the enc key its envelope is sealed to. */
export type ItemTarget = Pick<Host, 'name' | 'publicKey'> & { enc: Pick<EncKeyPair, 'publicKey'> };

/** The wire size of a bench item: the targets speak of "1 KB items" (a sealed, signed envelope of 1 KiB). */
export const ITEM_WIRE_BYTES = 1024;

export async function enrolHost(url: string, name: string): Promise<Host> {
  const key = generateSigningKey();
  // enrolment goes through the host's own client; the measured calls through the lighter one
  const answer = await new RelayApi({ baseUrl: url, hostName: name, key }).enrol();
  if (answer.status !== 200) throw new Error(`enrolling ${name}: HTTP ${answer.status}`);
  return { name, api: new BenchClient(url, name, key), key, publicKey: key.publicKey, enc: generateEncKeyPair() };
}

/** A sealed, signed envelope from `from` to `to` whose plaintext body is `bodyChars` long. */
function sealedTemplate(from: Host, to: ItemTarget, bodyChars: number): Record<string, unknown> {
  const id = newUlid(Date.now());
  const body = 'x'.repeat(bodyChars);
  const unsigned: UnsignedEnvelopeV3 = {
    v: 3,
    id,
    ts: new Date().toISOString(),
    from: `agent@${from.name}`,
    to: [`agent@${to.name}`],
    thread: id,
    reply_to: null,
    kind: 'message',
    subject: 'bench',
    body,
    needs_reply: false,
    refs: [],
    meta: deriveMeta(body),
    authority: null,
    enc: null,
  };
  return signEnvelope(sealEnvelopeBody(unsigned, to.enc.publicKey), from.name, generateSigningKey()) as unknown as Record<string, unknown>;
}

function wireOf(template: Record<string, unknown>, itemId: string): Buffer {
  return Buffer.from(JSON.stringify({ ...template, id: itemId, thread: itemId }));
}

/**
 * Makes items from `from` to `to`: each call returns a new push item and its wire size. One envelope
 * is sealed and signed per pair, with the longest body that keeps its wire within ITEM_WIRE_BYTES,
 * and re-issued under fresh ids (same length: ULIDs).
 */
export function itemMaker(from: Host, to: ItemTarget): () => { item: unknown; wireBytes: number } {
  let low = 0;
  let high = ITEM_WIRE_BYTES;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (wireOf(sealedTemplate(from, to, mid), newUlid(Date.now())).length <= ITEM_WIRE_BYTES) low = mid;
    else high = mid - 1;
  }
  const template = sealedTemplate(from, to, low);
  const size = wireOf(template, newUlid(Date.now())).length;
  if (size > ITEM_WIRE_BYTES) throw new Error(`an envelope with an empty body is already ${size} bytes of wire, over ${ITEM_WIRE_BYTES}`);
  return () => {
    const itemId = newUlid(Date.now());
    const wire = wireOf(template, itemId);
    return { item: { kind: 'envelope', item_id: itemId, targets: [{ host_pubkey: to.publicKey, wire_b64: toBase64(wire) }] }, wireBytes: wire.length };
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/**
 * Each sender pushes `batch` items per request, one request after the other, until `seconds` have
 * passed (or `maxItems` were accepted in all). Counts accepted items; any other status stops the bench.
 * `prebuiltItems` requests' worth of items are built and signed before the clock starts (like the
 * PostgreSQL comparison's prepared SQL), so the load generator's CPU goes to sending; a sender that
 * runs out builds more as it goes.
 */
export async function pushPhase(
  senders: Host[],
  to: Host,
  options: { batch: number; seconds: number; maxItems?: number; prebuiltItems?: number; latencies?: number[]; onStart?: () => void },
): Promise<PhaseResult> {
  const makers = senders.map((sender) => itemMaker(sender, to));
  const build = (index: number): PreparedCall => {
    const make = makers[index] as () => { item: unknown };
    return (senders[index] as Host).api.preparePush(Array.from({ length: options.batch }, () => make().item));
  };
  // built round by round and sent in that order, so item ids (ULIDs) reach the relay in about the
  // time order that live senders' would: out-of-order ids would scatter the dedup index's inserts
  const perSender = Math.ceil((options.prebuiltItems ?? 0) / options.batch / senders.length);
  const ready: PreparedCall[][] = senders.map(() => []);
  for (let round = 0; round < perSender; round += 1)
    senders.forEach((_, index) => {
      ready[index]?.push(build(index));
    });
  const sent = senders.map(() => 0);
  // the caller's array, when given, receives every request's latency
  const latencies: number[] = options.latencies ?? [];
  let accepted = 0;
  options.onStart?.();
  const cpuAtStart = process.cpuUsage();
  const start = performance.now();
  const end = start + options.seconds * 1000;
  const maxItems = options.maxItems ?? Number.POSITIVE_INFINITY;
  await Promise.all(
    senders.map(async (sender, index) => {
      while (performance.now() < end && accepted < maxItems) {
        const call = ready[index]?.[sent[index] ?? 0] ?? build(index);
        sent[index] = (sent[index] ?? 0) + 1;
        const t0 = performance.now();
        const answer = await sender.api.send(call);
        latencies.push(performance.now() - t0);
        const results = (answer.body['results'] ?? []) as Array<{ status: string }>;
        const bad = results.find((r) => r.status !== 'accepted');
        if (answer.status !== 200 || bad !== undefined) throw new Error(`push answered ${answer.status} ${bad?.status ?? ''}`);
        accepted += results.length;
      }
    }),
  );
  return summary(accepted, start, cpuAtStart, latencies);
}

/** The receiver pulls pages of up to `limit` and acks each page, until its queue is empty. */
export async function pullAckPhase(receiver: Host, limit: number): Promise<PhaseResult> {
  const latencies: number[] = [];
  let items = 0;
  let after = 0;
  const cpuAtStart = process.cpuUsage();
  const start = performance.now();
  for (;;) {
    const t0 = performance.now();
    const page = await receiver.api.pull(after, limit);
    const body = page.body as { epoch?: string; items?: unknown[]; last_seq?: number };
    if (page.status !== 200 || body.epoch === undefined || body.items === undefined || body.last_seq === undefined)
      throw new Error(`pull answered ${page.status}`);
    if (body.items.length === 0) break;
    const ack = await receiver.api.ack(body.last_seq, body.epoch);
    if (ack.status !== 200) throw new Error(`ack answered ${ack.status}`);
    latencies.push(performance.now() - t0);
    items += body.items.length;
    after = body.last_seq;
  }
  return summary(items, start, cpuAtStart, latencies);
}

function summary(items: number, start: number, cpuAtStart: NodeJS.CpuUsage, latencies: number[]): PhaseResult {
  const cpu = process.cpuUsage(cpuAtStart);
  return summarize(items, (performance.now() - start) / 1000, (cpu.user + cpu.system) / 1000, latencies);
}

function summarize(items: number, seconds: number, loadCpuMs: number, latencies: number[]): PhaseResult {
  const sorted = latencies.sort((a, b) => a - b);
  return { items, seconds, itemsPerSecond: items / seconds, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), loadCpuMs };
}

/**
 * Two push phases compared on a machine whose speed drifts: `rounds` short runs of each, taken in
 * turn, each summed over its own runs (latencies pooled). Each run gets its share of `options`.
 */
export async function alternatingPushPhases(
  senders: Host[],
  targets: { a: () => Promise<Host>; b: () => Promise<Host> },
  rounds: number,
  options: { batch: number; seconds: number; prebuiltItems: number },
): Promise<{ a: PhaseResult; b: PhaseResult }> {
  const share = { batch: options.batch, seconds: options.seconds / rounds, prebuiltItems: Math.ceil(options.prebuiltItems / rounds) };
  const pooled = { a: { items: 0, seconds: 0, loadCpuMs: 0, latencies: [] as number[] }, b: { items: 0, seconds: 0, loadCpuMs: 0, latencies: [] as number[] } };
  for (let round = 0; round < rounds; round += 1) {
    for (const side of ['a', 'b'] as const) {
      const latencies: number[] = [];
      const run = await pushPhase(senders, await targets[side](), { ...share, latencies });
      pooled[side].items += run.items;
      pooled[side].seconds += run.seconds;
      pooled[side].loadCpuMs += run.loadCpuMs;
      pooled[side].latencies.push(...latencies);
    }
  }
  const result = (side: 'a' | 'b'): PhaseResult => summarize(pooled[side].items, pooled[side].seconds, pooled[side].loadCpuMs, pooled[side].latencies);
  return { a: result('a'), b: result('b') };
}
