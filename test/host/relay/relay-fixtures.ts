// Two hosts whose LAN addresses are unreachable to each other, both pointed at one real relay on
// 127.0.0.1 that shares their injected clock; `tick` runs the daemon's own tick (daemon-tick.ts).
import assert from 'node:assert/strict';
import { generateEncKeyPair } from '../../../src/protocol/keys.ts';
import { RelayApi } from '../../../src/host/relay-client/api.ts';
import { DaemonTick } from '../../../src/host/daemon-tick.ts';
import type { FlushReport } from '../../../src/host/outbox.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import type { RelayLink } from '../../../src/host/transport/relay/relay-link.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import { startTestRelay, type TestHost, type TestRelay, type TestRelayOptions } from '../../helpers/relay-fixture.ts';
import { TestClock } from '../../helpers/clock.ts';
import { makeHost, pin } from '../fixtures.ts';

/** A LAN address nothing listens on. */
export const CLOSED_ADDR = 'http://127.0.0.1:9';

export interface RelayedHost {
  node: HostNode;
  /** the daemon's tick, without its timer and LAN server */
  daemon: DaemonTick;
  /** the daemon's relay link */
  link: RelayLink;
  /** the daemon's log lines */
  log: string[];
  /** `listener` hears each row's result during one `tick` call */
  heard: { listener?: FlushReport | undefined };
}

export interface RelayWorld {
  clock: TestClock;
  relay: TestRelay;
  a: RelayedHost;
  b: RelayedHost;
}

export function relayed(node: HostNode): RelayedHost {
  const log: string[] = [];
  const heard: RelayedHost['heard'] = {};
  const daemon = new DaemonTick(node, { log: (line) => log.push(line), onResult: (row, result, via) => heard.listener?.(row, result, via) });
  return { node, daemon, link: daemon.relay, log, heard };
}

/**
 * Two hosts pointed at a new relay, all on `clock`; it starts at the wall clock by default, because
 * the relay's Date header (which explains refused hops as clock skew) always tells the wall clock. With `front`, at
 * the URL it puts in front of the relay's (a proxy) instead.
 */
export async function relayWorld(
  options: TestRelayOptions = {},
  clock = new TestClock(Date.now()),
  front?: (relayUrl: string) => Promise<string>,
): Promise<RelayWorld> {
  const relay = await startTestRelay({ ...options, clock });
  const hostsUrl = front === undefined ? relay.url : await front(relay.url);
  const a = makeHost('alpha', clock, ['ann']);
  const b = makeHost('beta', clock, ['bob']);
  pin(a, b, CLOSED_ADDR);
  pin(b, a, CLOSED_ADDR);
  await setRelay(a, hostsUrl);
  await setRelay(b, hostsUrl);
  return { clock, relay, a: relayed(a), b: relayed(b) };
}

/** One daemon tick of `host`, and what it started; `report` hears each row's result. */
export async function tick(host: RelayedHost, report?: FlushReport): Promise<void> {
  host.heard.listener = report;
  try {
    await host.daemon.tick();
  } finally {
    host.heard.listener = undefined;
  }
}

/** Ticks `host` until its rows for `msgId` reach `state`, moving the clock a minute each time. */
export async function tickUntilRow(world: RelayWorld, host: RelayedHost, msgId: string, state: string, maxTicks = 6): Promise<void> {
  for (let i = 0; i < maxTicks; i++) {
    await tick(host);
    const rows = host.node.store.outbox.forMessage(msgId);
    if (rows.length > 0 && rows.every((r) => r.state === state)) return;
    world.clock.now += 60 * 1000; // past the backoff of the first few attempts
  }
  assert.fail(
    `rows of ${msgId} never reached ${state}: ${JSON.stringify(host.node.store.outbox.forMessage(msgId).map((r) => [r.state, r.last_error]))}; log ${host.log.join(' | ')}`,
  );
}

/** Stops the world's relay and starts one on the same port (same store unless `dir` is given). */
export async function restartRelay(world: RelayWorld, dir = world.relay.dir): Promise<void> {
  const port = Number(new URL(world.relay.url).port);
  await world.relay.stop();
  world.relay = await startTestRelay({ dir, clock: world.clock, port });
}

/** A raw relay client speaking as `node` (its real host key) with its own enc key pair for sealing tests. */
export function rawHost(world: RelayWorld, node: HostNode, enc = generateEncKeyPair()): TestHost {
  return {
    name: node.config.host,
    key: node.keys.hostKey,
    enc,
    api: new RelayApi({ baseUrl: world.relay.url, hostName: node.config.host, key: node.keys.hostKey, nowMs: world.clock.nowMs }),
  };
}
