// Reads (pulls, v1 pulls, v1 routing, lookups) run as store reads, never as write transactions: a
// write transaction would queue behind the commit groups and wait for a WAL sync that writes nothing
// (and take the writer from the pushes of every process of a relay group).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { enrolledAtCore, startTestCore } from '../helpers/relay-core-fixture.ts';
import { pushAccepted } from '../helpers/relay-fixture.ts';

test('pull, v1 pull and enc-key lookups commit no write group', async () => {
  const relay = await startTestCore();
  const a = await enrolledAtCore(relay, 'laptop');
  const b = await enrolledAtCore(relay, 'desk');
  await pushAccepted(a, b, relay.clock.now);
  const before = relay.commits();
  assert.equal((await b.api.pull(0)).status, 200);
  await relay.core.pullV1(b.enrolment, { after: 0 });
  await assert.rejects(relay.core.lookupEncAdByKey(a.key.publicKey), 'no enc ad published: refused, still a read');
  assert.equal(relay.commits(), before, 'reads went through the write path');
});
