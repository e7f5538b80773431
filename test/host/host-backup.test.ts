// A restore of an older backup says what it cannot bring back (issue 25, docs/host.md "Backup and
// restore"): mail received, or written between this host's agents, after the backup, and mail written
// for peers that had not left yet; counted against the store it replaces. In process, on real stores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { backupHost, META_BACKUP_TAKEN_AT, restoreHost } from '../../src/host/host-backup.ts';
import { flushOutbox } from '../../src/host/outbox.ts';
import { sendMail } from '../../src/host/send.ts';
import { LanTransport } from '../../src/host/transport/lan/client.ts';
import { restoreText } from '../../src/cli/backup.ts';
import { tempDir } from '../helpers/processes.ts';
import { TestClock } from '../helpers/clock.ts';
import { pairedHosts } from './fixtures.ts';

test('a restore names when the backup was taken and counts the mail that came after it and is not restored', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const toAnn = (subject: string): string => sendMail(b, { from: 'bob', to: ['ann@alpha'], subject, body: 'b' }).id;
  const before = toAnn('before');
  await flushOutbox(b, new LanTransport(b));
  const file = join(tempDir('mbx-host-backup-'), 'alpha.db');
  const takenAt = new Date(clock.now).toISOString();
  await backupHost(a, file);

  clock.now += 60_000;
  const received = [toAnn('after 1'), toAnn('after 2')];
  await flushOutbox(b, new LanTransport(b));
  const local = sendMail(a, { from: 'ann', to: ['al'], subject: 'between us', body: 'b' }).id;
  sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'gone out', body: 'b' });
  await flushOutbox(a, new LanTransport(a));
  sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'still waiting', body: 'b' });

  const receipt = await restoreHost(a.home, file, clock.now);
  assert.equal(receipt.taken_at, takenAt);
  assert.ok(receipt.rollback !== null);
  assert.deepEqual(receipt.not_restored, { mailbox_messages: 3, unsent_messages: 1 });
  // the restored store: the backup's mail, without the backup's own time in its meta
  assert.ok(a.store.mail.message(before) !== undefined);
  assert.deepEqual(
    [...received, local].map((id) => a.store.mail.message(id)),
    [undefined, undefined, undefined],
  );
  assert.equal(a.store.getMeta(META_BACKUP_TAKEN_AT), undefined);

  const text = restoreText(receipt);
  assert.match(
    text,
    new RegExp(
      `^LOST: mail this host received after the backup was taken \\(${takenAt.replace(/\./g, '\\.')}\\), and mail between its own agents since then, is not in the restored mailboxes and will not come again: `,
      'm',
    ),
  );
  assert.ok(text.includes(`\n  3 such message(s) are only in ${receipt.rollback}\n`), text);
  assert.match(text, /^LOST: 1 message\(s\) written here after the backup were still waiting to go: no peer has them; send them again$/m);
  assert.match(text, /^not lost: mail this host sent that reached a peer or the relay; what the backup still had waiting goes again/m);

  // a store restored over nothing has nothing to compare: only the general warning
  const plain = restoreText({ ...receipt, rollback: null, not_restored: null, taken_at: null });
  assert.match(plain, /^LOST: mail this host received after the backup was taken, and mail between/m);
  assert.doesNotMatch(plain, /such message|still waiting to go/);
});
