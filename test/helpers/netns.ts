// Two networks and a cloud, made of Linux network namespaces, for the home-to-work proof
// (docs/design.md, T147). home and work each hang off cloud by a veth pair with private
// addresses; cloud holds the relay's address on its loopback. Cloud forwards between them at first
// (so the hosts can pair), until cutLan() leaves each host able to reach cloud only. The namespaces
// are named after this process, and all of them are deleted after the test file, also on failure.
import { spawnSync } from 'node:child_process';
import { after } from 'node:test';
import { killAll, spawnNode } from './processes.ts';

/** One namespace and the address its processes listen on. */
export interface Site {
  netns: string;
  addr: string;
}

export interface TwoNetworks {
  cloud: Site;
  home: Site;
  work: Site;
  /**
   * home and work stop reaching each other (both still reach cloud). 'reject' (the default) fails a
   * connect at once; 'drop' discards their packets silently, so a connect waits for its timeout.
   */
  cutLan(how?: 'reject' | 'drop'): void;
}

/** The private /16 the three namespaces number from (their own stacks, so no clash with the machine's). */
const PREFIX = '10.201';
const created = new Set<string>();

function ip(args: string[]): { ok: boolean; stderr: string } {
  const run = spawnSync('ip', args, { encoding: 'utf8' });
  if (run.error !== undefined) return { ok: false, stderr: run.error.message };
  return { ok: run.status === 0, stderr: run.stderr.trim() };
}

function mustIp(args: string[]): void {
  const run = ip(args);
  if (!run.ok) throw new Error(`ip ${args.join(' ')} failed: ${run.stderr}`);
}

function setForwarding(netns: string, on: boolean): void {
  mustIp(['netns', 'exec', netns, 'sh', '-c', `echo ${on ? 1 : 0} > /proc/sys/net/ipv4/ip_forward`]);
}

/** Deletes every namespace this process made (their veth pairs go with them); idempotent. */
export function removeNetworks(): void {
  for (const netns of created) ip(['netns', 'del', netns]);
  created.clear();
}

// Processes first (a namespace outlives its name while anything runs in it), then the namespaces.
after(() => {
  killAll();
  removeNetworks();
});
process.on('exit', removeNetworks);

/** Creates a namespace with its loopback up; the reason it cannot when namespaces are not available here. */
function addNamespace(netns: string): string | null {
  const made = ip(['netns', 'add', netns]);
  if (!made.ok) return `cannot create network namespaces (ip netns add: ${made.stderr}); this test needs root and iproute2`;
  created.add(netns);
  mustIp(['-n', netns, 'link', 'set', 'lo', 'up']);
  return null;
}

/** A veth pair from cloud to `site` on subnet `<PREFIX>.<subnet>.0/24`: cloud is .1, the site .2 and routes through it. */
function uplink(cloud: string, site: Site, subnet: number): void {
  const cloudEnd = `to-${site.netns.slice(site.netns.lastIndexOf('-') + 1)}`;
  mustIp(['-n', cloud, 'link', 'add', cloudEnd, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', site.netns]);
  mustIp(['-n', cloud, 'addr', 'add', `${PREFIX}.${subnet}.1/24`, 'dev', cloudEnd]);
  mustIp(['-n', site.netns, 'addr', 'add', `${site.addr}/24`, 'dev', 'uplink']);
  mustIp(['-n', cloud, 'link', 'set', cloudEnd, 'up']);
  mustIp(['-n', site.netns, 'link', 'set', 'uplink', 'up']);
  mustIp(['-n', site.netns, 'route', 'add', 'default', 'via', `${PREFIX}.${subnet}.1`]);
}

/** Builds cloud, home and work; returns why it cannot (not root, no namespaces) instead of failing then. */
export function makeTwoNetworks(): TwoNetworks | string {
  if (process.getuid?.() !== 0) return 'network namespaces need root (this test runs as root in CI)';
  const base = `mbx-${process.pid}`;
  const cloud: Site = { netns: `${base}-cloud`, addr: `${PREFIX}.0.1` };
  const home: Site = { netns: `${base}-home`, addr: `${PREFIX}.1.2` };
  const work: Site = { netns: `${base}-work`, addr: `${PREFIX}.2.2` };
  for (const site of [cloud, home, work]) {
    const refused = addNamespace(site.netns);
    if (refused !== null) {
      removeNetworks();
      return refused;
    }
  }
  mustIp(['-n', cloud.netns, 'addr', 'add', `${cloud.addr}/32`, 'dev', 'lo']);
  uplink(cloud.netns, home, 1);
  uplink(cloud.netns, work, 2);
  setForwarding(cloud.netns, true);
  return {
    cloud,
    home,
    work,
    cutLan(how = 'reject') {
      if (how === 'drop') {
        // Cloud keeps forwarding, but discards what goes between home and work without a word
        // (a blackhole rule sends no ICMP), as a network that drops packets does.
        mustIp(['-n', cloud.netns, 'rule', 'add', 'from', home.addr, 'to', work.addr, 'blackhole']);
        mustIp(['-n', cloud.netns, 'rule', 'add', 'from', work.addr, 'to', home.addr, 'blackhole']);
        return;
      }
      setForwarding(cloud.netns, false);
      // Reject, not drop: a `prohibit` route fails a connect at once (EACCES), so the daemon's LAN
      // attempt fails fast and its rows move to the relay. Forwarding is off as well: nothing
      // crosses cloud either way.
      mustIp(['-n', home.netns, 'route', 'add', 'prohibit', `${work.addr}/32`]);
      mustIp(['-n', work.netns, 'route', 'add', 'prohibit', `${home.addr}/32`]);
    },
  };
}

const CONNECT_PROBE = `
const socket = require('node:net').connect({ host: process.argv[1], port: Number(process.argv[2]), timeout: 5000 });
socket.on('connect', () => { console.log('connected'); process.exit(0); });
socket.on('timeout', () => { console.log('timeout'); process.exit(1); });
socket.on('error', (err) => { console.log(err.code ?? err.message); process.exit(1); });`;

/** From inside `site`, opens a TCP connection to `url`'s host and port: 'connected', else the error code. */
export async function tcpProbe(site: Site, url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const child = spawnNode(['-e', CONNECT_PROBE, hostname, port], { netns: site.netns });
  await child.exited;
  return child.stdout().trim();
}
