// A daemon killed with SIGKILL mid-flight and restarted loses and duplicates nothing: the receiver
// dying after its commit but before its answer, and the sender dying before it settles its rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, pairCli, startCliDaemon, inboxMessages } from './host-helpers.ts';

interface InboxItem {
  id: string;
}
interface Status {
  recipients: Array<{ recipient: string; state: string }>;
}

test('the receiver is killed after committing, before answering: a retry is a duplicate, or its receipt settles the row', {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  const da = await startCliDaemon(alpha);
  const crashing = await startCliDaemon(beta, { MBX_FAILPOINT: 'lan-after-handle:/v2/envelopes' });
  await pairCli(alpha, beta);
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'b'])).trim();
  assert.equal(await crashing.exited, 'SIGKILL');
  await da.waitForLine(new RegExp(`envelope ${id} -> beta: cannot reach`));
  const db = await startCliDaemon(beta);
  // Either alpha's retry meets the duplicate, or beta's delivery receipt settles alpha's row first.
  await Promise.race([
    da.waitForLine(new RegExp(`envelope ${id} -> beta: duplicate`)),
    db.waitForLine(new RegExp(`receipt receipt:${id}:bob@beta:\\d+ -> alpha: accepted`)),
  ]);
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [id],
  );
  const [state] = (await cliJson<Status>(alpha, ['status', id])).recipients.map((r) => r.state);
  assert.ok(['handed-over', 'delivered', 'notified'].includes(state ?? ''), `settled, not ${state}`);
});

test('the sender is killed after the peer answered, before settling: nothing lost, nothing doubled', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  const crashing = await startCliDaemon(alpha, { MBX_FAILPOINT: 'outbox-before-settle' });
  await startCliDaemon(beta);
  await pairCli(alpha, beta);
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'b'])).trim();
  assert.equal(await crashing.exited, 'SIGKILL');
  assert.deepEqual(
    (await cliJson<Status>(alpha, ['status', id])).recipients.map((r) => r.state),
    ['queued'],
    'the row is still there',
  );
  const da = await startCliDaemon(alpha);
  await da.waitForLine(new RegExp(`envelope ${id} -> beta: duplicate`));
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [id],
  );
  const [state] = (await cliJson<Status>(alpha, ['status', id])).recipients.map((r) => r.state);
  assert.ok(['handed-over', 'delivered', 'notified'].includes(state ?? ''), `settled, not ${state}`);
});
