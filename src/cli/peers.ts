// Pairing and peers: pair, join, peers, peers remove.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { withNode } from './host-common.ts';
import { parseDuration } from './parse-args.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson, printResult } from './output.ts';
import { fingerprint } from '../protocol/fingerprint.ts';
import { lanAddress } from '../common/lan-address.ts';
import { META_LISTEN_ADDR } from '../host/store/host-store.ts';
import type { HostNode } from '../host/core/node.ts';
import { createPairToken, PAIR_DEFAULT_TTL_MS, PAIR_MAX_TTL_MS } from '../host/core/pairing.ts';
import { joinPeer, unpairPeer } from '../host/pairing-calls.ts';
import { normalizeAddr } from '../host/core/peer-addr.ts';
import { lanCall } from '../host/transport/lan/client.ts';
import { isPlainObject } from '../protocol/validate.ts';

/** How long `pair` waits to see whether the daemon runs. */
export const DAEMON_PROBE_TIMEOUT_MS = 2_000;

/** How the other side reaches this host: --my-addr, the config, the running daemon, else LAN IP + port. */
function ownAddr(node: HostNode, given: string | undefined): string {
  if (given !== undefined) return normalizeAddr(given);
  return node.config.addr ?? node.store.getMeta(META_LISTEN_ADDR) ?? `http://${lanAddress()}:${node.config.port}`;
}

/** Whether this host's daemon answers at the address it last listened on. */
async function daemonAnswers(node: HostNode): Promise<boolean> {
  const url = node.store.getMeta(META_LISTEN_ADDR);
  if (url === undefined) return false;
  try {
    const answer = await lanCall(url, 'GET', '/v1/status', undefined, null, DAEMON_PROBE_TIMEOUT_MS);
    return isPlainObject(answer.body) && answer.body.host_pubkey === node.keys.hostKey.publicKey;
  } catch {
    return false;
  }
}

export function registerPeerCommands(program: Command): void {
  program
    .command('pair')
    .description('open a one-time pairing token for another host to join (needs the daemon running)')
    .option('--ttl <duration>', 'token life', `${PAIR_DEFAULT_TTL_MS / 60_000}m`)
    .option('--json', 'print JSON')
    .action((opts: { ttl: string; json?: boolean }) => {
      const ttl = parseDuration(opts.ttl);
      if (ttl < 1000 || ttl > PAIR_MAX_TTL_MS) throw new CliError('the ttl must be between 1s and 24h', 'USAGE');
      return withNode(async (node) => {
        const { token, expiresAt } = createPairToken(node, ttl);
        const addr = ownAddr(node, undefined);
        if (!(await daemonAnswers(node)))
          process.stderr.write('agentmbx: warning: no daemon answers for this host: start `agentmbx daemon` so the other host can join\n');
        if (opts.json === true) printJson({ token, expires_at: new Date(expiresAt).toISOString(), addr });
        else
          process.stdout.write(
            `${token}\non the other host run: agentmbx join ${addr} ${token}\n(valid until ${new Date(expiresAt).toISOString()}; the daemon must be running here)\n`,
          );
      });
    });

  program
    .command('join <addr> <token>')
    .description('pair with the host at <addr> using the token it showed')
    .option('--my-addr <url>', "how the other host reaches this one (default: config, the daemon's address, else LAN IP + port)")
    .option('--json', 'print JSON')
    .action((addr: string, token: string, opts: { myAddr?: string; json?: boolean }) =>
      withNode(async (node) => {
        const host = await joinPeer(node, addr, token, ownAddr(node, opts.myAddr));
        const peer = node.store.peers.get(host);
        const fp = peer === undefined ? null : fingerprint(peer.host_pubkey);
        printResult(opts.json, { host, fingerprint: fp, addr: peer?.addr ?? null }, `paired with ${host} (${fp ?? ''})`);
      }),
    );

  const peers = program
    .command('peers')
    .description('list paired hosts')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withNode((node) => {
        const list = node.store.peers.list().map((p) => ({
          host: p.host,
          fingerprint: fingerprint(p.host_pubkey),
          host_pubkey: p.host_pubkey,
          addr: p.addr,
          enc_key: p.enc_pub !== null,
          paired_at: new Date(p.paired_at).toISOString(),
          last_ok_at: p.last_ok_at === null ? null : new Date(p.last_ok_at).toISOString(),
          last_error: p.last_error,
        }));
        if (opts.json === true) printJson(list);
        else if (list.length === 0) process.stdout.write('no peers (agentmbx pair / agentmbx join)\n');
        else
          for (const p of list)
            process.stdout.write(
              `${p.host}  ${p.fingerprint}  ${inLine(p.addr)}${p.enc_key ? '' : '  (no enc key yet)'}${p.last_error === null ? '' : `  last error: ${inLine(p.last_error)}`}\n`,
            );
      }),
    );

  peers
    .command('remove <host>')
    .description('unpair a host (its pinned keys are forgotten) and tell it so over the LAN when it answers')
    .option('--json', 'print JSON')
    // optsWithGlobals: `peers --json` is the parent's option too, and commander hands it to the parent
    .action((host: string, _local: unknown, command: Command) =>
      withNode(async (node) => {
        const opts = command.optsWithGlobals<{ json?: boolean }>();
        const done = await unpairPeer(node, host);
        if (done === null) throw new CliError(`no peer "${host}"`, 'NOT_FOUND');
        const told = done.peerTold ? `${host} was told` : `${host} was not told (${inLine(done.detail ?? '')}): remove this host there too`;
        printResult(opts.json, { removed: host, peer_told: done.peerTold, detail: done.detail }, `removed ${host}; ${told}`);
      }),
    );
}
