// A laptop that changes its IP is found again over the LAN without pairing again (protocol §5
// presence), end to end in Linux network namespaces through the real CLI: home's daemon sees its
// new address, beacons it to work, work proves home's key at the new address and moves its pin,
// and mail from work arrives there. No relay exists: without presence the mail could not arrive.
// Needs root (skipped with the reason otherwise).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { makeTwoNetworks } from '../helpers/netns.ts';
import { waitUntil } from '../helpers/wait.ts';
import { E2E_TIMEOUT_MS, cliJson, inboxMessages, newCliHost, pairCli, startCliDaemon } from './host-helpers.ts';
import { send } from './host-relay-helpers.ts';

/** Longest wait for anything here (the daemon looks at its addresses every 10 s, ticks every 2 s). */
const DEADLINE_MS = 60_000;
/** home's new address, on the same link as its old one. */
const NEW_HOME_ADDR = '10.201.1.5';

function ipIn(netns: string, args: string[]): void {
  const run = spawnSync('ip', ['-n', netns, ...args], { encoding: 'utf8' });
  assert.equal(run.status, 0, `ip -n ${netns} ${args.join(' ')}: ${run.stderr}`);
}

interface InboxItem {
  subject: string;
}

test('a host moved to another address gets its mail over the LAN without pairing again', { timeout: E2E_TIMEOUT_MS }, async (t) => {
  const net = makeTwoNetworks();
  if (typeof net === 'string') {
    t.skip(net);
    return;
  }
  // home listens on every interface, as a laptop's daemon does; work on its one address
  const home = await newCliHost('home', ['ann'], { netns: net.home.netns, bind: '0.0.0.0' });
  const work = await newCliHost('work', ['bob'], { netns: net.work.netns, bind: net.work.addr });
  await startCliDaemon(home);
  const workDaemon = await startCliDaemon(work);
  await pairCli(home, work);
  const port = new URL(home.url).port;
  assert.equal(new URL(home.url).hostname, net.home.addr);

  await send(work, 'bob', 'ann@home', 'before the move');
  await waitUntil('the first mail', DEADLINE_MS, async () => ((await inboxMessages<InboxItem>(home, 'ann')).length === 1 ? null : 'not yet'));

  // DHCP gave home another address: the old one is gone.
  ipIn(net.home.netns, ['addr', 'flush', 'dev', 'uplink']);
  ipIn(net.home.netns, ['addr', 'add', `${NEW_HOME_ADDR}/24`, 'dev', 'uplink']);
  ipIn(net.home.netns, ['route', 'add', 'default', 'via', '10.201.1.1']);
  const moved = `http://${NEW_HOME_ADDR}:${port}`;
  await workDaemon.waitForLine(new RegExp(`home moved: its address is now ${moved.replace(/\./g, '\\.')} `));
  const peers = await cliJson<Array<{ host: string; addr: string }>>(work, ['peers']);
  assert.equal(peers.find((p) => p.host === 'home')?.addr, moved);

  await send(work, 'bob', 'ann@home', 'after the move');
  await waitUntil('mail after the move', DEADLINE_MS, async () => {
    const subjects = (await inboxMessages<InboxItem>(home, 'ann')).map((m) => m.subject);
    return subjects.length === 2 ? null : JSON.stringify(subjects);
  });
  assert.deepEqual(
    (await inboxMessages<InboxItem>(home, 'ann')).map((m) => m.subject),
    ['before the move', 'after the move'],
  );
});
