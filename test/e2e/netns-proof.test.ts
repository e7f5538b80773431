// The home-to-work proof of the relay design (docs/design.md, T147), end to end in Linux network
// namespaces and only through the real CLI: two hosts on different networks that reach nothing but
// the relay in cloud exchange mail both ways while the relay is SIGKILLed mid-flight and restarted,
// then run one restore drill. Every message arrives exactly once and its status settles. Needs root
// (skipped with the reason otherwise). One test; its steps run in order and build on each other.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeTwoNetworks, tcpProbe, type TwoNetworks } from '../helpers/netns.ts';
import { runCli, tempDir, type Child } from '../helpers/processes.ts';
import { spawnRelay, type RelayProcess } from '../helpers/relay-process.ts';
import { waitUntil, withDeadline } from '../helpers/wait.ts';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, pairCli, startCliDaemon, type CliHost, inboxMessages } from './host-helpers.ts';
import { send } from './host-relay-helpers.ts';

/** Longest wait for anything that must happen (a healthy run needs a few seconds per step). */
const DEADLINE_MS = 60_000;
/**
 * How long a delivery receipt may take once the receiver has seen the re-pushed envelope: with the
 * receipt queued, it leaves on the receiver's next flush and the sender pulls it on its next tick
 * (2 s each); this is many of those.
 */
const RECEIPT_ROUND_TRIP_MS = 15_000;
/** The whole proof: several steps, each bounded by E2E_TIMEOUT_MS. */
const PROOF_TIMEOUT_MS = 3 * E2E_TIMEOUT_MS;
const MAIL_EACH_WAY = 8;
/** Of those, how many are relay-accepted before the relay is killed (one more is sent just before the kill). */
const BEFORE_KILL_EACH_WAY = 4;
const AFTER_BACKUP_EACH_WAY = 4;
/** Receipt states that mean the recipient host has the mail (T218). */
const SETTLED_STATES = new Set(['delivered', 'notified', 'read', 'acked']);

interface InboxItem {
  id: string;
}
interface MessageStatus {
  id: string;
  recipients: Array<{ recipient: string; state: string }>;
}
interface Overview {
  outbox: Record<string, number>;
}

function daemonOf(host: CliHost): Child {
  assert.ok(host.daemon !== null, `${host.name} has no daemon`);
  return host.daemon;
}

async function stopDaemon(host: CliHost): Promise<void> {
  const daemon = daemonOf(host);
  daemon.kill('SIGTERM');
  await daemon.exited;
  host.daemon = null;
}

/** The relay and the two hosts; `relay` is replaced on every restart. */
interface Proof {
  net: TwoNetworks;
  relayDir: string;
  relay: RelayProcess;
  home: CliHost;
  work: CliHost;
}

/** The relay again on its store, its address and its port. */
function restartRelay(p: Proof): Promise<RelayProcess> {
  return spawnRelay(p.relayDir, { netns: p.net.cloud.netns, args: ['--bind', p.net.cloud.addr, '--port', new URL(p.relay.url).port] });
}

/** `count` messages from `agent` on `host` to `to`, one after another; their ids. */
async function sendSeveral(host: CliHost, agent: string, to: string, label: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 1; i <= count; i++) ids.push(await send(host, agent, to, `${label} ${i}`));
  return ids;
}

/** Waits until `host`'s daemon logged that the relay took item `itemId` for `peer` (accepted, or a duplicate of an earlier push). */
async function relayTook(host: CliHost, itemId: string, peer: string): Promise<void> {
  await withDeadline(
    `${host.name}: the relay took ${itemId}`,
    DEADLINE_MS,
    daemonOf(host).waitForLine(new RegExp(`${itemId} -> ${peer}: relay (accepted|duplicate) seq \\d+`)),
  );
}

/** Waits until `host`'s daemon logged applying relay item `itemId` with `result`. */
async function pulled(host: CliHost, itemId: string, result: string): Promise<void> {
  await withDeadline(
    `${host.name}: relay item ${itemId} ${result}`,
    DEADLINE_MS,
    daemonOf(host).waitForLine(new RegExp(`relay envelope ${itemId} seq \\d+: ${result}`)),
  );
}

/** Waits until `agent`'s inbox on `host` holds `expected` ids, then checks it holds each exactly once and nothing else. */
async function inboxHoldsExactly(host: CliHost, agent: string, expected: string[]): Promise<void> {
  let ids: string[] = [];
  await waitUntil(`${expected.length} messages in ${agent}@${host.name}'s inbox`, DEADLINE_MS, async () => {
    ids = (await inboxMessages<InboxItem>(host, agent)).map((m) => m.id);
    return expected.every((id) => ids.includes(id)) ? null : `${ids.length} ids: ${ids.join(' ')}`;
  });
  assert.deepEqual([...ids].sort(), [...expected].sort(), `${agent}@${host.name}: every message exactly once, nothing else`);
}

function unsettled(status: MessageStatus): string | null {
  const open = status.recipients.filter((r) => !SETTLED_STATES.has(r.state));
  if (status.recipients.length > 0 && open.length === 0) return null;
  return `${status.id}: ${JSON.stringify(status.recipients)}`;
}

/**
 * Waits until nothing in `host`'s outbox waits any more (no row queued, none relay-accepted still
 * waiting for its receipt), then
 * checks that `status <id>` of every message in `ids` shows a delivery receipt for each recipient.
 */
async function allSettle(host: CliHost, ids: string[], deadlineMs = DEADLINE_MS): Promise<void> {
  await waitUntil(`${host.name}'s outbox to settle`, deadlineMs, async () => {
    const { outbox } = await cliJson<Overview>(host, ['status']);
    return (outbox['queued'] ?? 0) + (outbox['relay-accepted'] ?? 0) === 0 ? null : JSON.stringify(outbox);
  });
  const open = (await Promise.all(ids.map((id) => cliJson<MessageStatus>(host, ['status', id])))).map(unsettled).filter((s) => s !== null);
  assert.deepEqual(open, [], `${host.name}: every message sent is settled by its delivery receipt`);
}

/**
 * Runs the steps of one proof in order as subtests of `t`: once a step failed, the later ones are
 * skipped (they build on it).
 */
function stepper(t: TestContext): (name: string, fn: () => Promise<void>) => Promise<void> {
  let failed: string | null = null;
  return (name, fn) =>
    t.test(name, { timeout: E2E_TIMEOUT_MS }, async (st) => {
      if (failed !== null) {
        st.skip(`the step it builds on failed: ${failed}`);
        return;
      }
      try {
        await fn();
      } catch (err) {
        failed = name;
        throw err;
      }
    });
}

test('home to work through the relay only: a relay crash and a restore drill lose and duplicate nothing', { timeout: PROOF_TIMEOUT_MS }, async (t) => {
  const net = makeTwoNetworks();
  if (typeof net === 'string') {
    t.skip(net);
    return;
  }
  // A temporary directory lasts as long as the test that made it: the homes, the relay store and the
  // backup are made here, not in a step.
  const relayDir = tempDir('mbx-netns-relay-');
  const backupFile = join(tempDir('mbx-netns-backup-'), 'relay-backup.db');
  const relay = await spawnRelay(relayDir, { netns: net.cloud.netns, args: ['--bind', net.cloud.addr] });
  assert.equal(new URL(relay.url).hostname, net.cloud.addr);
  const p: Proof = {
    net,
    relayDir,
    relay,
    home: await newCliHost('home', ['ann'], { netns: net.home.netns, bind: net.home.addr }),
    work: await newCliHost('work', ['bob'], { netns: net.work.netns, bind: net.work.addr }),
  };
  const { home, work } = p;
  const step = stepper(t);
  /** what home sent to work and work to home: through the crash, and after the backup */
  const sent = { home: [] as string[], work: [] as string[], homeLate: [] as string[], workLate: [] as string[] };

  await step('home and work pair while cloud routes between them, then reach only the relay', async () => {
    await startCliDaemon(home);
    await startCliDaemon(work);
    await pairCli(home, work);
    const [homePeer] = await cliJson<Array<{ addr: string; enc_key: boolean }>>(work, ['peers']);
    assert.deepEqual([homePeer?.addr, homePeer?.enc_key], [home.url, true], 'work pinned home at its address on the home network');
    for (const host of [home, work]) await cli(host, ['relay', 'set', p.relay.url, '--key', p.relay.fingerprint]);
    for (const host of [home, work]) await withDeadline(`${host.name}: relay ready`, DEADLINE_MS, daemonOf(host).waitForLine(/relay ready: /));

    net.cutLan();
    assert.notEqual(await tcpProbe(net.home, work.url), 'connected', 'home cannot reach work');
    assert.notEqual(await tcpProbe(net.work, home.url), 'connected', 'work cannot reach home');
    assert.equal(await tcpProbe(net.home, p.relay.url), 'connected', 'home reaches the relay');
    assert.equal(await tcpProbe(net.work, p.relay.url), 'connected', 'work reaches the relay');
  });

  await step('eight messages each way, the relay SIGKILLed mid-flight and restarted: each arrives exactly once and settles', async () => {
    const both = <T>(toWork: () => Promise<T>, toHome: () => Promise<T>): Promise<[T, T]> => Promise.all([toWork(), toHome()]);
    // Some mail relay-accepted (each host's first message tries the LAN, finds it cut, and moves on)...
    const [early, earlyBack] = await both(
      () => sendSeveral(home, 'ann', 'bob@work', 'home to work', BEFORE_KILL_EACH_WAY),
      () => sendSeveral(work, 'bob', 'ann@home', 'work to home', BEFORE_KILL_EACH_WAY),
    );
    await Promise.all([...early.map((id) => relayTook(home, id, 'work')), ...earlyBack.map((id) => relayTook(work, id, 'home'))]);
    // ...one more each way just handed to the daemons (being pushed, or still queued), receipts on
    // their way, and the relay dies.
    const [next, nextBack] = await both(
      () => send(home, 'ann', 'bob@work', `home to work ${BEFORE_KILL_EACH_WAY + 1}`),
      () => send(work, 'bob', 'ann@home', `work to home ${BEFORE_KILL_EACH_WAY + 1}`),
    );
    p.relay.child.kill('SIGKILL');
    assert.equal(await p.relay.child.exited, 'SIGKILL');
    const restarted = await restartRelay(p);
    assert.deepEqual([restarted.url, restarted.epoch], [p.relay.url, p.relay.epoch], 'same address; a restart keeps the epoch');
    p.relay = restarted;
    // The rest while the hosts find the relay again.
    const rest = MAIL_EACH_WAY - BEFORE_KILL_EACH_WAY - 1;
    const [late, lateBack] = await both(
      () => sendSeveral(home, 'ann', 'bob@work', 'home to work, after the crash,', rest),
      () => sendSeveral(work, 'bob', 'ann@home', 'work to home, after the crash,', rest),
    );
    sent.home = [...early, next, ...late];
    sent.work = [...earlyBack, nextBack, ...lateBack];

    await Promise.all([inboxHoldsExactly(work, 'bob', sent.home), inboxHoldsExactly(home, 'ann', sent.work)]);
    await Promise.all([allSettle(home, sent.home), allSettle(work, sent.work)]);
    // Nothing crossed the LAN: the relay took every envelope.
    await Promise.all([...sent.home.map((id) => relayTook(home, id, 'work')), ...sent.work.map((id) => relayTook(work, id, 'home'))]);
  });

  await step('restore drill: restored from a backup older than some mail, the relay gets that mail again from its senders', async () => {
    const backup = await runCli(['relay', 'backup', backupFile, '--store-dir', relayDir], {}, net.cloud.netns);
    assert.equal(backup.code, 0, backup.stderr);
    assert.equal((JSON.parse(backup.stdout) as { epoch: string }).epoch, p.relay.epoch);

    // After the backup, with the relay serving: home's mail is relay-accepted while work is down;
    // then home is down while work pulls it (and sends its receipts) and sends its own mail. The
    // restore loses all of that from the relay: home's mail, work's receipts for it, work's mail.
    await stopDaemon(work);
    sent.homeLate = await sendSeveral(home, 'ann', 'bob@work', 'after the backup, home to work', AFTER_BACKUP_EACH_WAY);
    for (const id of sent.homeLate) await relayTook(home, id, 'work');
    await stopDaemon(home);
    await startCliDaemon(work);
    for (const id of sent.homeLate) await pulled(work, id, 'accepted');
    sent.workLate = await sendSeveral(work, 'bob', 'ann@home', 'after the backup, work to home', AFTER_BACKUP_EACH_WAY);
    for (const id of sent.workLate) await relayTook(work, id, 'home');
    for (const id of sent.homeLate) await relayTook(work, `receipt:${id}:bob@work:1`, 'home');

    p.relay.child.kill('SIGTERM');
    assert.equal(await p.relay.child.exited, 0);
    const restore = await runCli(['relay', 'restore', backupFile, '--store-dir', relayDir], {}, net.cloud.netns);
    assert.equal(restore.code, 0, restore.stderr);
    const restored = JSON.parse(restore.stdout) as { epoch: string; backup_epoch: string };
    assert.equal(restored.backup_epoch, p.relay.epoch);
    const restarted = await restartRelay(p);
    assert.equal(restarted.epoch, restored.epoch);
    assert.notEqual(restarted.epoch, p.relay.epoch, 'a restore gives the store a new epoch');
    p.relay = restarted;
    await startCliDaemon(home);

    // Senders re-push on the new epoch: work's mail reaches home for the first time; home's reaches
    // work again and is a duplicate there.
    for (const id of sent.workLate) await pulled(home, id, 'accepted');
    for (const id of sent.homeLate) await pulled(work, id, 'duplicate');
  });

  // Before anyone lists work's inbox: listing moves the deliveries to 'notified', and that state
  // change sends a fresh receipt which would settle home's rows whatever happened to the lost ones.
  await step('restore drill: mail whose delivery receipts the restore lost settles without more mailbox activity', async () => {
    // The re-pushed copies were duplicates at work (previous step): a receipt they cause is on its way by now.
    await allSettle(home, sent.homeLate, RECEIPT_ROUND_TRIP_MS);
  });

  await step('restore drill: mail sent after the backup is in each inbox exactly once, and every message settles', async () => {
    await Promise.all([inboxHoldsExactly(work, 'bob', [...sent.home, ...sent.homeLate]), inboxHoldsExactly(home, 'ann', [...sent.work, ...sent.workLate])]);
    // (the earlier mail settled in the crash step, for good)
    await Promise.all([allSettle(home, sent.homeLate), allSettle(work, sent.workLate)]);
  });
});
