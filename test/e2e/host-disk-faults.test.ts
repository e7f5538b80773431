// Disk faults under a host's home (issue 18), injected for real on a small tmpfs the test mounts:
// every command names a full or read-only disk with the fix, doctor fails with the free space, the
// daemon backs off and says so once, nothing is half-written, and mail queued before the fault is
// delivered after it (exactly once).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/processes.ts';
import { MiB, mountTmpfs, tmpfsSkipReason } from '../helpers/tmpfs.ts';
import { cli, cliJson, E2E_TIMEOUT_MS, inboxMessages, LOOPBACK, newCliHost, pairCli, startCliDaemon, type CliHost } from './host-helpers.ts';

const skip = tmpfsSkipReason();

/** A host whose home is on `dir` (a tmpfs), initialised with `agents`. */
function hostOn(dir: string, name: string, agents: string[]): Promise<CliHost> {
  return newCliHost(name, agents, LOOPBACK, join(dir, 'home'));
}

function homeOf(host: CliHost): string {
  return host.env['MBX_HOME'] as string;
}

function fullLine(host: CliHost): RegExp {
  return new RegExp(
    `^agentmbx: the disk holding ${homeOf(host)} is full \\(\\d+ bytes free\\): free some space on it, then try again \\(nothing was half-written\\)\\n$`,
  );
}

interface InboxItem {
  id: string;
}
interface Overview {
  outbox: Record<string, Record<string, number>>;
}

test('a full home: send and inbox name the full disk, doctor fails with the free space and the fix; a read-only home is named too; a grown disk works again', {
  skip,
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const disk = mountTmpfs(8 * MiB);
  const alpha = await hostOn(disk.dir, 'alpha', ['ann']);
  disk.fill();

  const send = await runCli(['send', '--from', 'ann', '--to', 'ann@alpha', '--subject', 's', '--body', 'while full'], alpha.env);
  assert.equal(send.code, 6, 'exit 6: storage');
  assert.match(send.stderr, fullLine(alpha));
  const inbox = await runCli(['inbox', '--agent', 'ann'], alpha.env);
  assert.equal(inbox.code, 6);
  assert.match(inbox.stderr, fullLine(alpha));
  const doctor = await runCli(['doctor'], alpha.env);
  assert.equal(doctor.code, 1);
  assert.match(
    doctor.stdout,
    new RegExp(`^FAIL  disk: the disk holding ${homeOf(alpha)} is full \\(0 bytes free\\): free some space on it, then try again`, 'm'),
  );
  assert.doesNotMatch(doctor.stdout, /all good/);

  disk.resize(16 * MiB);
  const id = (await cli(alpha, ['send', '--from', 'ann', '--to', 'ann@alpha', '--subject', 's', '--body', 'after'])).trim();
  assert.deepEqual(
    (await inboxMessages<InboxItem>(alpha, 'ann')).map((m) => m.id),
    [id],
    'the refused send left nothing',
  );
  assert.match(await cli(alpha, ['doctor']), new RegExp(`^ok    disk: \\d+(\\.\\d)? MiB free on the disk holding ${homeOf(alpha)}$`, 'm'));

  disk.setReadOnly(true);
  const readOnly = await runCli(['send', '--from', 'ann', '--to', 'ann@alpha', '--subject', 's', '--body', 'read-only'], alpha.env);
  assert.deepEqual(
    [readOnly.code, readOnly.stderr],
    [
      6,
      `agentmbx: the disk holding ${homeOf(alpha)} is read-only: remount it read-write (or point MBX_HOME elsewhere), then try again (nothing was half-written)\n`,
    ],
  );
  const doctorReadOnly = await runCli(['doctor'], alpha.env);
  assert.equal(doctorReadOnly.code, 1);
  assert.match(doctorReadOnly.stdout, new RegExp(`^FAIL  disk: the disk holding ${homeOf(alpha)} is read-only`, 'm'));
  disk.setReadOnly(false);
});

test('the daemon on a full home: mail queued before the fault is delivered after it, once; a send while full is refused whole; the daemon backs off and says so once', {
  skip,
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const disk = mountTmpfs(8 * MiB);
  const alpha = await hostOn(disk.dir, 'alpha', ['ann']);
  const beta = await newCliHost('beta', ['bob']);
  const alphaDaemon = await startCliDaemon(alpha);
  const betaDaemon = await startCliDaemon(beta);
  await pairCli(alpha, beta);
  betaDaemon.kill('SIGKILL');
  await betaDaemon.exited;
  const queued = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'queued before'])).trim();
  await alphaDaemon.waitForLine(new RegExp(`envelope ${queued} -> beta: cannot reach`));

  disk.fill();
  // the daemon keeps the store's files open, so the CLI opens it and its write transaction is what fails
  const refused = await runCli(['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 's', '--body', 'while full'], alpha.env);
  assert.equal(refused.code, 6);
  assert.match(refused.stderr, fullLine(alpha));
  await startCliDaemon(beta);
  // alpha's first write of a tick fails (recording the hand-over, or what it learnt of its peer
  // before it): it backs off and says so once; the mail is at beta at most once meanwhile
  await alphaDaemon.waitForLine(new RegExp(`the disk holding ${homeOf(alpha)} is full .*; the daemon retries, less often while it lasts`));
  const whileFull = (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id);
  assert.ok(whileFull.length === 0 || (whileFull.length === 1 && whileFull[0] === queued), alphaDaemon.stdout());

  disk.resize(16 * MiB);
  await alphaDaemon.waitForLine(new RegExp(`the disk holding ${homeOf(alpha)} takes writes again`));
  await alphaDaemon.waitForLine(new RegExp(`envelope ${queued} -> beta: (duplicate|accepted)`));
  assert.equal(
    alphaDaemon
      .stdout()
      .split('\n')
      .filter((l) => / is full /.test(l)).length,
    1,
    alphaDaemon.stdout(),
  );
  const overview = await cliJson<Overview>(alpha, ['status']);
  const rows = Object.values(overview.outbox).flatMap((states) => Object.values(states));
  assert.equal(
    rows.reduce((a, b) => a + b, 0),
    1,
    `one row: the refused send wrote none (${JSON.stringify(overview)})`,
  );
  assert.deepEqual(
    (await inboxMessages<InboxItem>(beta, 'bob')).map((m) => m.id),
    [queued],
    'delivered exactly once',
  );
});
