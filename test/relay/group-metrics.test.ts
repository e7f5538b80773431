// /metrics of `relay serve --workers 2` (group-metrics.ts): whichever worker answers a scrape, it
// shows the whole group's figures. Each scrape opens a new connection, so round robin hands
// successive scrapes to different workers.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { test } from 'node:test';
import { enrolledHost, pushAccepted } from '../helpers/relay-fixture.ts';
import { tempDir } from '../helpers/processes.ts';
import { spawnRelay, type RelayProcess } from '../helpers/relay-process.ts';

/** GET /metrics on a connection of its own. */
function scrape(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(new URL('/metrics', url), { agent: false }, (response) => {
      let body = '';
      response
        .setEncoding('utf8')
        .on('data', (chunk: string) => {
          body += chunk;
        })
        .on('end', () => {
          if (response.statusCode === 200) resolve(body);
          else reject(new Error(`/metrics answered ${response.statusCode}: ${body}`));
        });
    })
      .on('error', reject)
      .end();
  });
}

function value(exposition: string, series: string): number {
  const line = exposition.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

test("every worker answers /metrics with the whole group's figures: summed counters, the store's queue once, the primary's sweeps", async () => {
  const relay: RelayProcess = await spawnRelay(tempDir('agentmbx-group-metrics-'), { workers: 2 });
  try {
    const a = await enrolledHost(relay, 'laptop');
    const b = await enrolledHost(relay, 'desk');
    await Promise.all(Array.from({ length: 10 }, () => pushAccepted(a, b, Date.now())));
    for (let i = 0; i < 6; i += 1) {
      const figures = await scrape(relay.url);
      assert.equal(
        value(figures, 'agentmbx_http_requests_total{route="/metrics",status="200"}'),
        i,
        `scrape ${i + 1} counts every earlier scrape, on either worker`,
      );
      assert.equal(value(figures, 'agentmbx_push_items_total{outcome="accepted",reason=""}'), 10);
      assert.equal(value(figures, 'agentmbx_queue_items'), 10, "the store's queue, not one count per worker");
      assert.ok(value(figures, 'agentmbx_sweeps_total{result="ok"}') >= 1, "the primary's sweeps are counted too");
    }
  } finally {
    relay.child.kill('SIGKILL');
    await relay.child.exited;
  }
});
