// Two homes that cannot reach each other on the LAN, one relay child process, the real CLI: mail
// both ways, receipts settling the rows, the relay SIGKILLed after committing a push (its answer
// lost) and restarted, and every message in each inbox exactly once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnRelay } from '../helpers/relay-process.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, inboxMessages } from './host-helpers.ts';
import { relayedPair, send } from './host-relay-helpers.ts';

interface InboxItem {
  id: string;
}
interface Overview {
  outbox: Record<'envelope' | 'receipt' | 'rotation', Record<string, number>>;
  relay: { state: string; rows: Record<string, number> } | null;
}

test('mail both ways through a relay killed and restarted mid-flight arrives exactly once and settles', { timeout: E2E_TIMEOUT_MS }, async () => {
  // Paired on the LAN earlier; then neither LAN address works (see relayedPair).
  const { relayDir, relay: crashing, alpha, beta, da, db } = await relayedPair({ failpoint: 'relay.push.after-commit' });

  const m1 = await send(alpha, 'ann', 'bob@beta', 'first');
  assert.equal(await crashing.child.exited, 'SIGKILL', 'the relay died after committing m1, before answering');
  const relay = await spawnRelay(relayDir, { args: ['--port', new URL(crashing.url).port] });
  assert.equal(relay.url, crashing.url);
  assert.equal(relay.epoch, crashing.epoch, 'a restart keeps the epoch');

  const m2 = await send(beta, 'bob', 'ann@alpha', 'second');
  const m3 = await send(alpha, 'ann', 'bob@beta', 'third');
  // beta receives m1 and m3 and its receipts reach alpha (for m1 perhaps before alpha's retry).
  for (const id of [m1, m3]) {
    await db.waitForLine(new RegExp(`relay envelope ${id} seq \\d+: accepted`));
    await da.waitForLine(new RegExp(`relay receipt receipt:${id}:bob@beta:1 seq \\d+: accepted`));
  }
  await da.waitForLine(new RegExp(`relay envelope ${m2} seq \\d+: accepted`));
  await db.waitForLine(new RegExp(`relay receipt receipt:${m2}:ann@alpha:1 seq \\d+: accepted`));

  // m1's row leaves the outbox only on a valid accept receipt: wait for alpha's retry (after its backoff).
  await da.waitForLine(new RegExp(`envelope ${m1} -> beta: relay (duplicate|accepted) seq \\d+`));

  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [m1, m3],
  );
  assert.deepEqual(
    (await inboxMessages<InboxItem>(alpha, 'ann')).map((m) => m.id),
    [m2],
  );
  const overviewA = await cliJson<Overview>(alpha, ['status']);
  assert.equal(overviewA.relay?.state, 'ok');
  // alpha's two envelopes settled by beta's receipts; its receipt for m2 handed over to the relay
  assert.equal(overviewA.outbox.envelope['settled'], 2, JSON.stringify(overviewA));
  assert.equal(overviewA.outbox.envelope['relay-accepted'] ?? 0, 0);
  const overviewB = await cliJson<Overview>(beta, ['status']);
  assert.equal(overviewB.outbox.envelope['settled'], 1, JSON.stringify(overviewB));
  assert.equal(overviewB.relay?.rows['settled'], 1, JSON.stringify(overviewB));
  assert.deepEqual(JSON.parse(await cli(alpha, ['relay', 'quarantine', '--json'])), []);
});
