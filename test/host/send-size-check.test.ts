// The size check at send tells the truth after an outage (issue 25): a body too large for the pinned
// relay is refused only after one probe of the peer's LAN (GET /v1/status, bounded) says it does not
// answer now; a peer that answers again gets the copy over the LAN only, up to the documented 256 KiB.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestClock } from '../helpers/clock.ts';
import { pairedHosts, pin } from './fixtures.ts';
import { withLanProbe } from '../../src/host/lan-probe.ts';
import { RouteError } from '../../src/host/core/route.ts';
import { sendMail, type SendRequest } from '../../src/host/send.ts';
import { MAX_BODY_BYTES } from '../../src/protocol/records/envelope.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { isoTime } from '../../src/host/core/node.ts';

const CLOSED_ADDR = 'http://127.0.0.1:9';

test("after an outage, send probes the peer's LAN before refusing a body too large for the relay", async () => {
  const clock = new TestClock(Date.now());
  const { a, b } = await pairedHosts(clock);
  a.store.relay.pin(CLOSED_ADDR, generateSigningKey().publicKey, clock.now); // max_item_bytes: the default 512 KiB
  // beta answered, then an outage; it is back, but no LAN call has said so since
  const seen = clock.now;
  a.store.peers.noteReachable('beta', seen);
  clock.advance(1_000);
  a.store.peers.noteError('beta', 'connection refused', clock.now);
  clock.advance(5 * 60_000);

  const big: SendRequest = { from: 'ann', to: ['bob@beta'], subject: 'big', body: 'x'.repeat(200_000) };
  // without the probe the old failure decides, and the sentence says on what it rests
  assert.throws(
    () => sendMail(a, big),
    (err: unknown) =>
      err instanceof RouteError &&
      err.message.includes(`beta is not known up on the LAN, not seen on the LAN since ${isoTime(seen)}: send a body of at most about`),
  );
  // with it, beta answers: the copy goes over the LAN only, and so does the largest body there is
  for (const body of ['x'.repeat(200_000), 'y'.repeat(MAX_BODY_BYTES)]) {
    const { id } = sendMail(a, await withLanProbe(a, { ...big, body }));
    assert.match(a.store.outbox.forMessage(id)[0]?.relay_refused ?? '', /too large for the relay .*: LAN only$/);
  }

  // beta gone (its address answers nothing): refused, saying it was probed just now
  pin(a, b, CLOSED_ADDR);
  a.store.peers.noteReachable('beta', seen);
  a.store.peers.noteError('beta', 'connection refused', seen + 1_000);
  const started = Date.now();
  await assert.rejects(
    async () => sendMail(a, await withLanProbe(a, big)),
    (err: unknown) =>
      err instanceof RouteError && err.message.includes(`beta is not reachable on the LAN now (probed), not seen on the LAN since ${isoTime(seen)}`),
  );
  assert.ok(Date.now() - started < 5_000, 'the probe is bounded');
  // a body the relay takes is not held up by a probe
  const small = await withLanProbe(a, { ...big, body: 'small' });
  assert.equal(small.lanProbedDown, undefined);
});
