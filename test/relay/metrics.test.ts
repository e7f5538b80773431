import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { fingerprint } from '../../src/protocol/fingerprint.ts';
import { ConfigError, HEARTBEAT_INTERVAL_MS } from '../../src/relay/config.ts';
import { resolveServeOptions } from '../../src/cli/relay-serve-flags.ts';
import { checkHealth } from '../../src/relay/http/health.ts';
import { createRelayLogger, POLL_SUMMARY_WINDOW_MS, type RelayLogLevel } from '../../src/relay/http/logging.ts';
import { ITEM_REFUSALS, type ItemRefusalCode } from '../../src/protocol/relay-api/item-results.ts';
import { RelayMetrics } from '../../src/relay/http/metrics.ts';
import { waitUntil } from '../helpers/wait.ts';
import { enrolledHost, envelopeItemTo, startTestRelay } from '../helpers/relay-fixture.ts';
import { handTicker, TestClock } from '../helpers/clock.ts';
import { freshStore } from './store/store-fixtures.ts';

async function get(url: string): Promise<{ status: number; type: string | null; text: string }> {
  const response = await fetch(url);
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** The value of one sample line of the exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('GET /metrics: requests, push outcomes, commit groups, queue depth and age, enrolments, sweeps', async () => {
  const clock = new TestClock();
  const relay = await startTestRelay({ clock });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const { item } = envelopeItemTo(a, b, clock.now);
  const bad = { kind: 'envelope', item_id: 'x', targets: [{ host_pubkey: b.key.publicKey, wire_b64: 'bm90IGpzb24=' }] };
  assert.equal((await a.api.push([item, bad])).status, 200);
  assert.equal((await a.api.push([item])).status, 200);
  clock.advance(10_000);

  const scraped = await get(`${relay.url}/metrics`);
  assert.equal(scraped.status, 200);
  assert.match(scraped.type ?? '', /^text\/plain; version=0\.0\.4/);
  const text = scraped.text;
  assert.equal(sample(text, 'agentmbx_http_requests_total{route="/v2/relay/items",status="200"}'), 2);
  assert.equal(sample(text, 'agentmbx_http_requests_total{route="/v1/relay/enrol",status="200"}'), 2);
  assert.equal(sample(text, 'agentmbx_push_items_total{outcome="accepted",reason=""}'), 1);
  assert.equal(sample(text, 'agentmbx_push_items_total{outcome="duplicate",reason=""}'), 1);
  assert.equal(sample(text, 'agentmbx_push_items_total{outcome="rejected",reason="bad wire"}'), 1);
  assert.equal(sample(text, 'agentmbx_enrolments_total'), 2);
  assert.ok((sample(text, 'agentmbx_commit_group_size_count') ?? 0) >= 3, 'two enrolments and an accepted item at least');
  assert.ok(sample(text, 'agentmbx_commit_group_seconds_count') !== undefined);
  assert.equal(sample(text, 'agentmbx_queue_items'), 1);
  assert.equal(sample(text, 'agentmbx_queue_oldest_item_age_seconds'), 10);
  assert.equal(sample(text, 'agentmbx_sweeps_total{result="ok"}'), 1, 'the sweep at start');
  assert.ok(
    text.includes('agentmbx_rate_limit_refusals_total') && text.includes('agentmbx_epoch_rotations_total') && text.includes('agentmbx_key_rotations_total'),
  );
});

test('GET /healthz: 200 while the store commits and the heartbeat is fresh, 503 with the reason when it is stale', async () => {
  const clock = new TestClock();
  const relay = await startTestRelay({ clock });
  const healthy = await get(`${relay.url}/healthz`);
  assert.deepEqual([healthy.status, JSON.parse(healthy.text)], [200, { status: 'ok' }]);
  clock.advance(3 * HEARTBEAT_INTERVAL_MS + 1_000); // the heartbeat (written at start) is now 91 s old
  const stale = await get(`${relay.url}/healthz`);
  assert.deepEqual([stale.status, JSON.parse(stale.text)], [503, { status: 'unhealthy', reason: 'the heartbeat is 91 s old (limit 90 s)' }]);
});

test('the health check fails when the store does not commit a write in time, or refuses it', async () => {
  const { store } = await freshStore();
  let release = (): void => {};
  const blocking = store.transaction(
    () =>
      new Promise<void>((resolve) => {
        release = resolve;
      }),
  );
  // The timeout fires when the test says: at once while the write is held, never once it is free.
  let timerFires = true;
  const startTimer = (fire: () => void): (() => void) => {
    if (timerFires) queueMicrotask(fire);
    return () => {};
  };
  const options = { store, nowMs: () => 0, heartbeatIntervalMs: 1_000, writeTimeoutMs: 20, startTimer };
  assert.deepEqual(await checkHealth(options), { ok: false, reason: 'the store did not commit a write within 20 ms' });
  release();
  await blocking;
  timerFires = false;
  assert.deepEqual(await checkHealth(options), { ok: false, reason: 'no heartbeat has been written yet' });
  await store.close();
  assert.deepEqual(await checkHealth(options), { ok: false, reason: 'the store refused a write: the relay store is closed' });
});

test('--metrics-bind serves /metrics and /healthz on their own listener and takes /metrics off the relay port', async () => {
  const clock = new TestClock();
  const relay = await startTestRelay({ clock, metricsBind: { host: '127.0.0.1', port: 0 } });
  const metricsUrl = relay.service.metricsUrl;
  assert.ok(metricsUrl !== null);
  const scraped = await get(`${metricsUrl}/metrics`);
  assert.equal(scraped.status, 200);
  assert.match(scraped.text, /agentmbx_queue_items 0/);
  assert.equal((await get(`${metricsUrl}/healthz`)).status, 200);
  assert.equal((await get(`${metricsUrl}/v2/relay/info`)).status, 404);
  assert.equal((await get(`${relay.url}/metrics`)).status, 404);
  assert.equal((await get(`${relay.url}/healthz`)).status, 200);
});

test('--metrics-bind is parsed as HOST:PORT or [IPv6]:PORT', () => {
  assert.deepEqual(resolveServeOptions({ metricsBind: '0.0.0.0:9464' }, {}).metricsBind, { host: '0.0.0.0', port: 9464 });
  assert.deepEqual(resolveServeOptions({ metricsBind: '[::1]:9464' }, {}).metricsBind, { host: '::1', port: 9464 });
  assert.equal(resolveServeOptions({}, {}).metricsBind, undefined);
  for (const bad of ['9464', 'host:', 'host:99999', '::1:9464', '']) {
    assert.throws(() => resolveServeOptions({ metricsBind: bad }, {}), ConfigError, bad);
  }
});

/** A request log collected in memory: its lines parsed, and its raw text. */
function memoryLog(level: RelayLogLevel = 'info'): {
  logger: ReturnType<typeof createRelayLogger>;
  lines: () => Array<Record<string, unknown>>;
  text: () => string;
} {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  return {
    logger: createRelayLogger(sink, level),
    lines: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    text: () => lines.join('\n'),
  };
}

test('request logs are JSON lines with id, route, status, latency and host fingerprint, never a key, signature or body', async () => {
  const log = memoryLog();
  const clock = new TestClock();
  const relay = await startTestRelay({ clock, requestLog: log.logger });
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const { item } = envelopeItemTo(a, b, clock.now);
  await a.api.push([item]);
  const push = log.lines().find((l) => l['route'] === '/v2/relay/items');
  assert.ok(push !== undefined, log.text());
  assert.deepEqual(Object.keys(push).sort(), ['host_fp', 'latency_ms', 'level', 'method', 'msg', 'req_id', 'route', 'status', 'time']);
  assert.equal(push['status'], 200);
  assert.equal(push['method'], 'POST');
  assert.equal(typeof push['latency_ms'], 'number');
  assert.equal(push['host_fp'], fingerprint(a.key.publicKey));
  assert.ok(typeof push['req_id'] === 'string' && push['req_id'] !== '');
  const all = log.text();
  for (const secret of [a.key.publicKey, b.key.publicKey, item.targets[0]?.wire_b64 ?? '?', item.item_id, 'x-mbx-sig', 'authorization']) {
    assert.ok(!all.includes(secret), `logs must not contain ${secret.slice(0, 12)}…`);
  }
});

test("pushed items are counted by the core's outcome codes: one label per catalogue code, and a refusal detail is never a label", async () => {
  const metrics = new RelayMetrics();
  const codes = Object.keys(ITEM_REFUSALS) as ItemRefusalCode[];
  metrics.itemsPushed(['accepted', 'duplicate', ...codes, 'bad envelope', 'rate']);
  const { body } = await metrics.exposition();
  assert.equal(sample(body, 'agentmbx_push_items_total{outcome="accepted",reason=""}'), 1);
  for (const code of codes) {
    assert.equal(sample(body, `agentmbx_push_items_total{outcome="rejected",reason="${code}"}`), ['bad envelope', 'rate'].includes(code) ? 2 : 1, code);
  }
  assert.equal(sample(body, 'agentmbx_rate_limit_refusals_total{limit="push"}'), 2);
  assert.equal(body.split('\n').filter((l) => l.startsWith('agentmbx_push_items_total{')).length, codes.length + 2);
});

test('successful polls are summarised once per window at info, on the timer (no later request needed), and logged one by one only at debug', async () => {
  const clock = new TestClock();
  const log = memoryLog('info');
  const timer = handTicker();
  const relay = await startTestRelay({ clock, requestLog: log.logger, pollSummaryTicker: timer.ticker });
  const hosts = [await enrolledHost(relay, 'laptop'), await enrolledHost(relay, 'desk')];
  for (let i = 0; i < 3; i += 1) for (const host of hosts) assert.equal((await host.api.pull(0)).status, 200);
  clock.advance(POLL_SUMMARY_WINDOW_MS);
  const summaries = () => log.lines().filter((l) => l['msg'] === 'polls');
  assert.deepEqual(summaries(), [], 'nothing before the window ends');
  timer.fire(); // the window ends on an idle relay: no request follows
  assert.deepEqual(
    log.lines().filter((l) => l['route'] === '/v2/relay/items'),
    [],
    'no line per successful poll at info',
  );
  const summary = summaries()[0] ?? {};
  assert.deepEqual([summary['polls'], summary['hosts'], summary['level'], summary['window_ms']], [6, 2, 30, POLL_SUMMARY_WINDOW_MS]);
  timer.fire();
  assert.equal(summaries().length, 1, 'a window without polls logs nothing');

  const debug = memoryLog('debug');
  const verbose = await startTestRelay({ clock, requestLog: debug.logger, pollSummaryTicker: handTicker().ticker });
  const host = await enrolledHost(verbose, 'laptop');
  await host.api.pull(0);
  await waitUntil('the debug poll line', 10_000, async () =>
    debug.lines().some((l) => l['route'] === '/v2/relay/items') ? null : JSON.stringify(debug.lines()),
  );
});

test('a relay that stops writes the poll summary of its last window and stops the timer', async () => {
  const clock = new TestClock();
  const log = memoryLog('info');
  const timer = handTicker();
  const relay = await startTestRelay({ clock, requestLog: log.logger, pollSummaryTicker: timer.ticker });
  const host = await enrolledHost(relay, 'laptop');
  for (let i = 0; i < 2; i += 1) assert.equal((await host.api.pull(0)).status, 200);
  clock.advance(1_000);
  await relay.stop();
  assert.equal(timer.stopped(), true);
  const summaries = log.lines().filter((l) => l['msg'] === 'polls');
  assert.deepEqual(
    summaries.map((l) => [l['polls'], l['hosts'], l['window_ms']]),
    [[2, 1, 1_000]],
  );
});
