// One process of the bench's idle fleet (held-pulls.ts starts several, FLEET_HOSTS_PER_PROCESS hosts
// each: one process cannot hold 20,000 sockets under a 20,000 open-file limit). It enrols its hosts,
// then on the bench's word runs their pulls, each host holding its pull (`wait`) or polling, and
// reports over the IPC channel: pulls answered, failures by cause, and when each item arrived
// (fleet-messages.ts sharedClockMs). Per host it keeps a name, a key and a cursor; one http Agent
// carries every pull. A failed pull is retried after FAILED_PULL_RETRY_MS, never at once: a loop of
// 20,000 pulls failing at once (EMFILE) never yields to the event loop and filled a 4 GB heap.
import { setMaxListeners } from 'node:events';
import { Agent, request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { RelayApi } from '../src/host/relay-client/api.ts';
import { generateSigningKey, type SigningKey } from '../src/protocol/keys.ts';
import { signRelayHop } from '../src/protocol/relay-hop.ts';
import { sharedClockMs, type FailureCauses, type FromFleetProcess, type PullMode, type ToFleetProcess } from './fleet-messages.ts';

/** Enrolments this process runs at once. */
const ENROL_CONCURRENCY = 8;
/** A failed pull is re-issued after this long, jittered by up to as much again. */
const FAILED_PULL_RETRY_MS = 1_000;
/** Distinct failure causes reported (the rest are counted under "other"). */
const MAX_FAILURE_CAUSES = 16;
/** A pull page's answer is small (at most a few bench items): a larger one is a fault. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** One keep-alive connection per host: a held pull keeps its socket for up to its wait. */
const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY });

const names: string[] = [];
const keys: SigningKey[] = [];
/** each host's pull cursor (the last seq it was answered) */
let cursors = new Float64Array(0);
let relay: URL | null = null;
/** the source address of this process's pulls (each fleet process its own: see held-pulls.ts) */
let localAddress: string | undefined;

let pulls = 0;
let failures = 0;
const causes: FailureCauses = {};
let running: { stop: AbortController; loops: Array<Promise<void>> } | null = null;

function tell(message: FromFleetProcess): void {
  process.send?.(message);
}

function fail(cause: string): void {
  failures += 1;
  const key = cause in causes || Object.keys(causes).length < MAX_FAILURE_CAUSES ? cause : 'other';
  causes[key] = (causes[key] ?? 0) + 1;
}

async function enrol(url: string, prefix: string, count: number, from: string | undefined): Promise<void> {
  relay = new URL(url);
  localAddress = from;
  let next = 0;
  await Promise.all(
    Array.from({ length: ENROL_CONCURRENCY }, async () => {
      while (next < count) {
        const index = next++;
        const name = `${prefix}${index}`;
        const key = generateSigningKey();
        const answer = await new RelayApi({ baseUrl: url, hostName: name, key }).enrol();
        if (answer.status !== 200) throw new Error(`enrolling ${name}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
        names[index] = name;
        keys[index] = key;
      }
    }),
  );
  cursors = new Float64Array(count);
  tell({ op: 'enrolled', hosts: names.map((name, i) => [name, (keys[i] as SigningKey).publicKey]) });
}

interface Page {
  status: number;
  ids: string[];
  lastSeq: number;
}

/** One pull of host `index` from its cursor; with `waitS` > 0 the relay holds it until an item comes or the wait ends. */
function pull(url: URL, index: number, waitS: number, signal: AbortSignal): Promise<Page> {
  const after = cursors[index] as number;
  const path = `/v2/relay/items?after=${after}${waitS > 0 ? `&wait=${waitS}` : ''}`;
  const headers = signRelayHop({ method: 'GET', path, rawBody: '' }, names[index] as string, keys[index] as SigningKey, Date.now());
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, localAddress, method: 'GET', path, headers: { ...headers }, agent, signal }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_ANSWER_BYTES) req.destroy(new Error('answer too large'));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items?: Array<{ item_id: string }>; last_seq?: number };
          resolve({ status: res.statusCode ?? 0, ids: (body.items ?? []).map((i) => i.item_id), lastSeq: body.last_seq ?? after });
        } catch (error) {
          reject(error);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    // a connection closed before the answer ended settles the pull (a no-op once it resolved)
    req.on('close', () => reject(new Error('connection closed')));
    req.end();
  });
}

/**
 * Host `index`'s pulls until `stop`: held ones re-issued at once after each answer, polls every
 * `pollMs`; each host starts at an offset spread over its interval (for held pulls, the wait), as
 * hosts that came online at different times: a relay's steady state, where held pulls end and are
 * re-issued all the time, not a herd that all pulled in the same second.
 */
async function pullLoop(url: URL, index: number, hosts: number, mode: PullMode, waitS: number, pollMs: number, stop: AbortSignal): Promise<void> {
  const pause = (ms: number): Promise<void> => sleep(ms, undefined, { signal: stop }).catch(() => {});
  await pause((index * (mode === 'polling' ? pollMs : waitS * 1000)) / hosts);
  while (!stop.aborted) {
    const sent = performance.now();
    try {
      const page = await pull(url, index, mode === 'held' ? waitS : 0, stop);
      pulls += 1;
      if (page.status !== 200) {
        fail(`HTTP ${page.status}`);
        await pause(FAILED_PULL_RETRY_MS * (1 + Math.random()));
        continue;
      }
      if (page.ids.length > 0) tell({ op: 'items', ids: page.ids, at: sharedClockMs() });
      cursors[index] = page.lastSeq;
    } catch (error) {
      if (stop.aborted) return;
      fail((error as NodeJS.ErrnoException).code ?? (error as Error).message);
      await pause(FAILED_PULL_RETRY_MS * (1 + Math.random()));
      continue;
    }
    if (mode === 'polling') await pause(Math.max(0, pollMs - (performance.now() - sent)));
  }
}

async function handle(message: ToFleetProcess): Promise<void> {
  switch (message.op) {
    case 'enrol':
      await enrol(message.url, message.prefix, message.count, message.localAddress);
      return;
    case 'run': {
      if (relay === null || running !== null) throw new Error('run before enrol, or while running');
      const stop = new AbortController();
      // every pull out listens on it
      setMaxListeners(0, stop.signal);
      const url = relay;
      const hosts = Math.min(message.hosts, names.length);
      const loops = Array.from({ length: hosts }, (_, index) => pullLoop(url, index, hosts, message.mode, message.waitS, message.pollMs, stop.signal));
      running = { stop, loops };
      tell({ op: 'running' });
      return;
    }
    case 'count':
      tell({ op: 'count', pulls, failures, causes: { ...causes }, rssBytes: process.memoryUsage.rss() });
      return;
    case 'stop':
      if (running !== null) {
        running.stop.abort();
        await Promise.all(running.loops);
        running = null;
      }
      tell({ op: 'stopped' });
      return;
  }
}

process.on('message', (message: ToFleetProcess) => {
  handle(message).catch((error: unknown) => {
    tell({ op: 'failed', reason: error instanceof Error ? error.message : String(error) });
  });
});
// the bench is gone (or done): so is this process
process.on('disconnect', () => process.exit(0));
