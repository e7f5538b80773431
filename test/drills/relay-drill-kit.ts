// What the relay drills share: the real relay as a child process (with a push rate no drill hits),
// a test-side sender that keeps each message until it holds a valid accept receipt for it, a
// test-side receiver that pulls in pages, keeps its checkpoint and acks, and the checker that
// counts lost, duplicated and phantom messages (a queue linearizability check in miniature).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fromBase64 } from '../../src/protocol/base64.ts';
import { sha256Hex } from '../../src/protocol/hash.ts';
import type { SigningKey } from '../../src/protocol/keys.ts';
import { acceptedTarget, verifyAccept } from '../../src/protocol/records/accept.ts';
import { RelayApi, type RelayAnswer } from '../../src/host/relay-client/api.ts';
import { envelopeItem, sealedEnvelope, type TestHost } from '../helpers/relay-fixture.ts';
import { tempDir, type Child } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';

/** A dead relay answers nothing; a call gives up after this long and is retried. */
const CALL_TIMEOUT_MS = 5_000;

export interface DrillRelay {
  child: Child;
  url: string;
  epoch: string;
  relayPubkey: string;
}

export interface DrillRelayOptions {
  /** MBX_FAILPOINT for the child */
  failpoint?: string;
  /** config keys added to the lifted push rate */
  config?: Record<string, unknown>;
  /** `--workers` (default 1) */
  workers?: number;
}

/** `agentmbx relay serve` on `dir` (spawnRelay), with a config that lifts the push rate (drills push fast). */
export async function spawnDrillRelay(dir: string, options: DrillRelayOptions = {}): Promise<DrillRelay> {
  const config = join(tempDir('agentmbx-drill-config-'), 'relay.json');
  writeFileSync(config, JSON.stringify({ pushes_per_minute: 1_000_000, ...options.config }));
  const relay = await spawnRelay(dir, {
    args: ['--config', config],
    ...(options.failpoint === undefined ? {} : { failpoint: options.failpoint }),
    ...(options.workers === undefined ? {} : { workers: options.workers }),
  });
  const info = (await fetch(new URL('/v2/relay/info', relay.url)).then((r) => r.json())) as { relay_pubkey: string };
  return { child: relay.child, url: relay.url, epoch: relay.epoch, relayPubkey: info.relay_pubkey };
}

export function apiFor(relay: DrillRelay, name: string, key: SigningKey): RelayApi {
  return new RelayApi({ baseUrl: relay.url, hostName: name, key, timeoutMs: CALL_TIMEOUT_MS });
}

export interface Message {
  id: string;
  wire: string;
  wireHash: string;
}

/** A sender's outbox toward one target: rows stay until a valid accept receipt names them. */
export class DrillSender {
  readonly host: TestHost;
  readonly target: TestHost;
  readonly messages: Message[] = [];
  /** message id → epoch of the accept that settled it */
  readonly accepted = new Map<string, string>();

  constructor(host: TestHost, target: TestHost) {
    this.host = host;
    this.target = target;
  }

  /** `count` new messages; `padding` is appended to each body (large items fill a disk sooner) */
  compose(count: number, nowMs: number, padding = ''): void {
    for (let i = 0; i < count; i += 1) {
      const env = sealedEnvelope(this.host, this.target, nowMs, `drill ${this.messages.length}`, `body ${this.messages.length}${padding}`);
      this.messages.push({ id: env.id, wire: env.wire, wireHash: sha256Hex(env.wire) });
    }
  }

  pending(): Message[] {
    return this.messages.filter((m) => !this.accepted.has(m.id));
  }

  /**
   * Pushes `batch`; a row is settled only by an accept signed by the relay key for its id, target and
   * bytes. Returns the relay's answer; throws when the relay is gone.
   */
  async push(relay: DrillRelay, batch: Message[]): Promise<RelayAnswer> {
    const api = apiFor(relay, this.host.name, this.host.key);
    const answer = await api.push(batch.map((m) => envelopeItem(m.id, [{ host: this.target, wire: m.wire }])));
    const results = Array.isArray(answer.body['results']) ? (answer.body['results'] as Array<Record<string, unknown>>) : [];
    for (const message of batch) {
      const result = results.find((r) => r['item_id'] === message.id);
      const accept = result === undefined ? null : verifyAccept(result['accept'], result['sig'], relay.relayPubkey);
      if (accept !== null && acceptedTarget(accept, message.id, this.target.key.publicKey, message.wireHash) !== null) {
        this.accepted.set(message.id, accept.epoch);
      }
    }
    return answer;
  }
}

/** A receiving host: pulls after its checkpoint, "delivers" each new message id once, acks. */
export class DrillReceiver {
  readonly host: TestHost;
  /** what the relay handed out, every time: message id → the seqs it came under */
  readonly raw = new Map<string, number[]>();
  /** the mailbox: message id → times delivered to it (receiver dedup by id makes it 1) */
  readonly mailbox = new Map<string, number>();
  /** bytes as received, to compare with what was sent */
  readonly wires = new Map<string, string>();
  checkpoint = 0;
  epoch: string | undefined;
  epochChanges = 0;

  constructor(host: TestHost) {
    this.host = host;
  }

  /** One page (held up to `waitS` when nothing waits); returns whether more remain. A new epoch resets the checkpoint to 0. Throws when the relay is gone. */
  async pullPage(relay: DrillRelay, limit: number, waitS?: number): Promise<boolean> {
    const api = apiFor(relay, this.host.name, this.host.key);
    const answer = await api.pull(this.checkpoint, limit, this.epoch, waitS);
    if (answer.status === 409) {
      this.epoch = String(answer.body['epoch']);
      this.checkpoint = 0;
      this.epochChanges += 1;
      return true;
    }
    if (answer.status !== 200) throw new Error(`pull answered ${answer.status}`);
    const page = answer.body as { epoch: string; items: Array<{ seq: number; item_id: string; wire_b64: string }>; last_seq: number; more: boolean };
    this.epoch = page.epoch;
    for (const item of page.items) {
      this.raw.set(item.item_id, [...(this.raw.get(item.item_id) ?? []), item.seq]);
      if (!this.mailbox.has(item.item_id)) {
        this.mailbox.set(item.item_id, 1);
        this.wires.set(item.item_id, (fromBase64(item.wire_b64) ?? Buffer.alloc(0)).toString('utf8'));
      }
    }
    // the checkpoint moves only after the page's effects (the mailbox above) are "committed"
    this.checkpoint = page.last_seq;
    return page.more;
  }

  async ack(relay: DrillRelay): Promise<void> {
    if (this.epoch === undefined) return; // nothing pulled yet, so nothing to ack
    await apiFor(relay, this.host.name, this.host.key).ack(this.checkpoint, this.epoch);
  }
}

export interface Verdict {
  /** accepted by the relay, never delivered */
  lost: string[];
  /** handed out under two different seqs in one epoch, or delivered to the mailbox twice */
  duplicated: string[];
  /** delivered but never sent, or with other bytes than sent */
  phantom: string[];
}

export function check(senders: DrillSender[], receiver: DrillReceiver, options: { seqsPerId?: number } = {}): Verdict {
  const sent = new Map(senders.flatMap((s) => s.messages.map((m) => [m.id, m] as const)));
  const accepted = senders.flatMap((s) => [...s.accepted.keys()]);
  return {
    lost: accepted.filter((id) => !receiver.mailbox.has(id)),
    duplicated: [...receiver.mailbox.entries()]
      .filter(([id, count]) => count !== 1 || new Set(receiver.raw.get(id)).size > (options.seqsPerId ?? 1))
      .map(([id]) => id),
    phantom: [...receiver.wires.entries()].filter(([id, wire]) => sent.get(id)?.wire !== wire).map(([id]) => id),
  };
}
