// End to end through the real CLI: two homes, two daemons on 127.0.0.1, pairing, mail both ways,
// inbox/read/ack, and each sender sees the acked receipt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, pairCli, startCliDaemon, inboxMessages } from './host-helpers.ts';

interface InboxItem {
  id: string;
  from: string;
  subject: string;
  state: string;
}
interface Status {
  recipients: Array<{ recipient: string; state: string; note: string | null }>;
}

test('two hosts pair and exchange sealed mail with receipts, through the CLI', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  const da = await startCliDaemon(alpha);
  const db = await startCliDaemon(beta);
  await pairCli(alpha, beta);
  const peersA = await cliJson<Array<{ host: string; enc_key: boolean }>>(alpha, ['peers']);
  assert.deepEqual(
    peersA.map((p) => [p.host, p.enc_key]),
    [['beta', true]],
  );
  const peersB = await cliJson<Array<{ host: string; enc_key: boolean }>>(beta, ['peers']);
  assert.deepEqual(
    peersB.map((p) => [p.host, p.enc_key]),
    [['alpha', true]],
  );

  const who = await cliJson<{ host: string; fingerprint: string }>(alpha, ['whoami']);
  assert.equal(who.host, 'alpha');
  assert.match(who.fingerprint, /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/);

  for (const [from, to, sender, recipient, senderDaemon, recipientDaemon] of [
    [alpha, beta, 'ann', 'bob', da, db],
    [beta, alpha, 'bob', 'ann', db, da],
  ] as const) {
    const id = (
      await cli(from, ['send', '--from', sender, '--to', `${recipient}@${to.name}`, '--subject', `hi from ${sender}`, '--body', `the body from ${sender}`])
    ).trim();
    assert.match(id, /^[0-9A-Z]{26}$/);
    await senderDaemon.waitForLine(new RegExp(`envelope ${id} -> ${to.name}: accepted`));
    const inbox = await inboxMessages<InboxItem>(to, recipient);
    assert.deepEqual(
      inbox.map((m) => [m.id, m.from, m.subject]),
      [[id, `${sender}@${from.name}`, `hi from ${sender}`]],
    );
    const msg = await cliJson<{ body: string; state: string }>(to, ['read', id, '--agent', recipient]);
    assert.equal(msg.body, `the body from ${sender}`);
    assert.equal(msg.state, 'read');
    await cli(to, ['ack', id, '--agent', recipient, '--note', 'got it']);
    // delivered 1, notified 2, read 3, acked 4: wait for the acked receipt to be handed over.
    await recipientDaemon.waitForLine(new RegExp(`receipt receipt:${id}:${recipient}@${to.name}:4 -> ${from.name}: accepted`));
    const status = await cliJson<Status>(from, ['status', id]);
    assert.deepEqual(
      status.recipients.map((r) => [r.recipient, r.state, r.note]),
      [[`${recipient}@${to.name}`, 'acked', 'got it']],
    );
    assert.deepEqual(await inboxMessages<InboxItem>(to, recipient), [], 'acked mail leaves the inbox');
  }
});
