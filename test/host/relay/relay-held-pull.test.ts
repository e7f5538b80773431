// The daemon's held pull (relay-link.ts holdPulls): with a relay that advertises max_wait_s, mail
// through the relay reaches the receiver without any tick of its daemon; a relay that does not
// (AgentMBX's, here the legacy proxy) is polled by the tick as before; a pull that got no answer
// because the relay restarted is sent again within seconds, not after the unreachable backoff.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runDoctor } from '../../../src/host/doctor.ts';
import { listInbox } from '../../../src/host/mailbox.ts';
import { sendMail } from '../../../src/host/send.ts';
import { HELD_PULL_NOT_HELD_PAUSE_MS } from '../../../src/host/transport/relay/relay-link.ts';
import type { EncodedJson } from '../../../src/relay/core/encoded-json.ts';
import { HeldPulls } from '../../../src/relay/core/held-pulls.ts';
import { startLegacyRelayProxy } from '../../helpers/legacy-relay-proxy.ts';
import { waitUntil } from '../../helpers/wait.ts';
import { startTestRelay } from '../../helpers/relay-fixture.ts';
import { relayWorld, tick, tickUntilRow, type RelayedHost, type RelayWorld } from './relay-fixtures.ts';

/** Far below the unreachable backoff (60 s) and the held wait (55 s): only a held pull, re-sent at once, meets it. */
const ARRIVES_WITHIN_MS = 15_000;

async function stopAfter(t: { after(fn: () => Promise<void>): void }, host: RelayedHost): Promise<void> {
  t.after(() => host.daemon.stop());
}

/** alpha sends to bob@beta until the relay accepted it; returns the message id. */
async function relayed(world: RelayWorld, subject: string): Promise<string> {
  const { id } = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject, body: 'hello' });
  await tickUntilRow(world, world.a, id, 'relay-accepted');
  return id;
}

/** What doctor's relay check says on `host`. */
async function doctorRelay(world: RelayWorld, host: RelayedHost): Promise<{ level: string; detail: string }> {
  const report = await runDoctor(host.node.home, () => world.clock.now);
  return report.checks.find((c) => c.check === 'relay') ?? assert.fail('no relay check');
}

async function arrives(host: RelayedHost, id: string): Promise<void> {
  await waitUntil(`message ${id} in bob's inbox without a tick`, ARRIVES_WITHIN_MS, async () =>
    listInbox(host.node, 'bob').some((m) => m.id === id) ? null : host.log.slice(-3).join(' | '),
  );
}

test('a relay that holds pulls: the message reaches the receiver without a tick of its daemon', async (t) => {
  const world = await relayWorld();
  const { b } = world;
  await tick(b);
  b.daemon.holdRelayPulls();
  await stopAfter(t, b);
  await waitUntil('beta to hold a pull', 10_000, async () => (world.relay.service.core.context.heldPulls.size === 1 ? null : b.log.join(' | ')));
  const id = await relayed(world, 'held');
  await arrives(b, id);
  assert.ok(b.log.some((line) => /relay holds pulls: up to 55 s/.test(line)));
  const doctor = await doctorRelay(world, b);
  assert.equal(doctor.level, 'ok', doctor.detail);
  assert.match(doctor.detail, /it holds pulls up to 55 s: mail from it comes as it arrives$/);
  // the next pull is out again at once
  await waitUntil('beta to hold its next pull', 10_000, async () => (world.relay.service.core.context.heldPulls.size === 1 ? null : 'none held'));
});

test('a relay that does not advertise max_wait_s is polled by the tick, as before', async (t) => {
  const world = await relayWorld({}, undefined, async (url) => (await startLegacyRelayProxy(url)).url);
  const { b } = world;
  await tick(b);
  b.daemon.holdRelayPulls();
  await stopAfter(t, b);
  const id = await relayed(world, 'polled');
  assert.equal(world.relay.service.core.context.heldPulls.size, 0, 'no pull held');
  await tick(b);
  assert.ok(
    listInbox(b.node, 'bob').some((m) => m.id === id),
    'the tick pulled it',
  );
  assert.ok(!b.log.some((line) => /relay holds pulls/.test(line)));
  const doctor = await doctorRelay(world, b);
  assert.equal(doctor.level, 'ok', doctor.detail);
  assert.match(doctor.detail, /it holds no pulls: mail from it comes on the daemon's tick$/);
});

test('a held pull that got no answer (the relay restarted) is sent again within seconds, and the mail after the restart arrives', async (t) => {
  const world = await relayWorld();
  const { b } = world;
  await tick(b);
  b.daemon.holdRelayPulls();
  await stopAfter(t, b);
  await waitUntil('beta to hold a pull', 10_000, async () => (world.relay.service.core.context.heldPulls.size === 1 ? null : 'none held'));
  const port = Number(new URL(world.relay.url).port);
  await world.relay.stop();
  // the held pull was answered at the stop; the next one finds nobody there
  await waitUntil('beta to find the relay unreachable', 10_000, async () => (b.node.store.relay.get()?.state === 'unreachable' ? null : b.log.join(' | ')));
  const retryAt = b.node.store.relay.get()?.retry_at ?? 0;
  world.relay = await startTestRelay({ dir: world.relay.dir, clock: world.clock, port });
  // no tick, no clock moved: only the held pull's own retry reaches the relay again
  await waitUntil('beta to hold a pull at the restarted relay', ARRIVES_WITHIN_MS, async () =>
    world.relay.service.core.context.heldPulls.size === 1 ? null : b.log.slice(-2).join(' | '),
  );
  assert.ok(world.clock.now < retryAt, 'before the unreachable backoff would have let it try');
  assert.equal(b.node.store.relay.get()?.state, 'ok', 'the relay counts as reachable again');
  const id = await relayed(world, 'after the restart');
  await arrives(b, id);
});

/** A relay's held-pull table that holds nothing (as one at its cap) and notes when each pull that asked to wait reached it. */
class FullHeldPulls extends HeldPulls<EncodedJson> {
  readonly seenAt: number[] = [];
  constructor() {
    super({ cap: 0 });
  }
  override pull(...args: Parameters<HeldPulls<EncodedJson>['pull']>): Promise<EncodedJson> {
    if (args[1] > 0) this.seenAt.push(performance.now());
    return super.pull(...args);
  }
}

test('a relay whose held-pull table is full answers at once: the daemon pulls again after a pause, not in a loop', async (t) => {
  const table = new FullHeldPulls();
  const world = await relayWorld({ heldPulls: table });
  const { b } = world;
  await tick(b);
  b.daemon.holdRelayPulls();
  await stopAfter(t, b);
  await waitUntil('two pulls', 10_000, async () => (table.seenAt.length >= 2 ? null : `${table.seenAt.length} pulls`));
  const [first = 0, second = 0] = table.seenAt;
  assert.ok(second - first >= HELD_PULL_NOT_HELD_PAUSE_MS - 50, `${(second - first).toFixed(0)} ms between two pulls the relay could not hold`);
  // mail still arrives: the next pull takes it
  const id = await relayed(world, 'not held');
  await arrives(b, id);
});
