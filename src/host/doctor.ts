// doctor: the truth about this host — keys and file modes, the store, the daemon, each peer over a
// signed call, and the outbox by age. `ok` is false when something needs the owner.
import { fingerprint } from '../protocol/fingerprint.ts';
import { verifyEncAdV1 } from '../protocol/records/enc-ad.ts';
import { isPlainObject } from '../protocol/validate.ts';
import { META_LISTEN_ADDR } from './store/host-store.ts';
import { homePaths, loadKeys, readConfig } from './core/identity.ts';
import type { HostNode } from './core/node.ts';
import { closeNode, openNode } from './open-node.ts';
import { diskFaultText, homeDiskState, nameDiskError } from './store/disk-errors.ts';
import { freeSpaceText } from '../common/disk-fault.ts';
import { lanCall } from './transport/lan/client.ts';
import { errorText } from '../common/answer-error.ts';
import { ageText } from '../common/time-text.ts';
import { relayChecks } from './relay-client/doctor-checks.ts';
import { guardChecks } from './wake/loop-guard.ts';
import type { CheckLevel, DoctorCheck } from './core/doctor-check.ts';

/** How long doctor waits for one peer or the daemon. */
export const DOCTOR_CALL_TIMEOUT_MS = 5_000;
/** A row queued longer than this needs the owner's eye. */
export const DOCTOR_STUCK_AFTER_MS = 60 * 60 * 1000;

export interface DoctorReport {
  home: string;
  host: string | null;
  /** no check failed (warnings allowed) */
  ok: boolean;
  warnings: number;
  failures: number;
  checks: DoctorCheck[];
}

/** The last line of doctor: "all good", or the warnings and failures counted ("1 failure, 2 warnings"). */
export function doctorVerdict(report: Pick<DoctorReport, 'warnings' | 'failures'>): string {
  const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
  const parts = [report.failures > 0 ? plural(report.failures, 'failure') : '', report.warnings > 0 ? plural(report.warnings, 'warning') : ''];
  return parts.some((p) => p !== '') ? parts.filter((p) => p !== '').join(', ') : 'all good';
}

async function daemonCheck(node: HostNode, waiting: number): Promise<DoctorCheck> {
  const url = node.store.getMeta(META_LISTEN_ADDR);
  const down = (detail: string): DoctorCheck => ({
    check: 'daemon',
    level: waiting > 0 ? 'fail' : 'warn',
    detail: `${detail}${waiting > 0 ? `; ${waiting} outbox row(s) wait for it` : ''} (agentmbx daemon)`,
  });
  if (url === undefined) return down('the daemon has never run');
  try {
    const answer = await lanCall(url, 'GET', '/v1/status', undefined, null, DOCTOR_CALL_TIMEOUT_MS);
    const body = answer.body;
    if (answer.status === 200 && isPlainObject(body) && body.host_pubkey === node.keys.hostKey.publicKey)
      return { check: 'daemon', level: 'ok', detail: `answering at ${url}` };
    return down(`${url} answers, but not as this host`);
  } catch {
    return down(`not answering at ${url}`);
  }
}

async function peerCheck(node: HostNode, host: string, waiting: number): Promise<DoctorCheck> {
  const peer = node.store.peers.get(host);
  if (peer === undefined) return { check: `peer ${host}`, level: 'fail', detail: 'gone' };
  const name = `peer ${host}`;
  if (peer.enc_pub === null) return { check: name, level: 'fail', detail: 'no enc key yet: mail to it cannot be sealed (is its daemon running?)' };
  const unreachable = (why: string): DoctorCheck => ({
    check: name,
    level: waiting > 0 ? 'fail' : 'warn',
    detail: `${why} at ${peer.addr}${waiting > 0 ? `; ${waiting} row(s) waiting` : ''}`,
  });
  try {
    const answer = await lanCall(peer.addr, 'GET', '/v1/enc-key', undefined, node, DOCTOR_CALL_TIMEOUT_MS);
    if (answer.status !== 200 || !isPlainObject(answer.body)) return unreachable(`refused our signed call (${errorText(answer)})`);
    const { enc_pub: encPub, sig } = answer.body;
    if (!verifyEncAdV1(host, encPub, sig, peer.host_pubkey))
      return { check: name, level: 'fail', detail: `answers at ${peer.addr} but not with its pinned key ${fingerprint(peer.host_pubkey)}` };
    if (encPub !== peer.enc_pub) return { check: name, level: 'warn', detail: 'reachable, but advertises another enc key than the pinned one' };
    return { check: name, level: 'ok', detail: `reachable at ${peer.addr}, key ${fingerprint(peer.host_pubkey)}` };
  } catch (err) {
    return unreachable(err instanceof Error ? err.message : String(err));
  }
}

function outboxChecks(node: HostNode): DoctorCheck[] {
  const now = node.nowMs();
  const checks: DoctorCheck[] = [];
  for (const g of node.store.outbox.queuedAges(now)) {
    checks.push({
      check: `outbox ${g.kind} -> ${g.peer_host}`,
      level: g.oldest > DOCTOR_STUCK_AFTER_MS ? 'fail' : 'ok',
      detail: `${g.count} queued, oldest ${ageText(g.oldest)}`,
    });
  }
  const rejected = node.store.outbox.countByState('rejected', 'envelope');
  const undelivered = node.store.outbox.countByState('undelivered', 'envelope');
  if (rejected + undelivered > 0) {
    checks.push({ check: 'outbox given up', level: 'warn', detail: `${rejected} rejected, ${undelivered} undelivered after 72 h (senders were alerted)` });
  }
  if (checks.length === 0) checks.push({ check: 'outbox', level: 'ok', detail: 'empty' });
  return checks;
}

/** Whether the disk holding the home takes writes: full (with the free space) or read-only fails, with the fix. */
function diskCheck(home: string): DoctorCheck {
  const state = homeDiskState(home);
  if (state !== null) return { check: 'disk', level: 'fail', detail: diskFaultText(state, home) };
  return { check: 'disk', level: 'ok', detail: `${freeSpaceText(home)} on the disk holding ${home}` };
}

export async function runDoctor(home: string, nowMs: () => number = Date.now): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  const report = (host: string | null): DoctorReport => {
    const count = (level: CheckLevel): number => checks.filter((c) => c.level === level).length;
    return { home, host, ok: count('fail') === 0, warnings: count('warn'), failures: count('fail'), checks };
  };
  checks.push(diskCheck(home));
  try {
    readConfig(home);
    loadKeys(home);
    checks.push({ check: 'keys', level: 'ok', detail: `home, config and key files private (${homePaths(home).keysDir})` });
  } catch (err) {
    checks.push({ check: 'keys', level: 'fail', detail: err instanceof Error ? err.message : String(err) });
    return report(null);
  }
  let node: HostNode;
  try {
    node = openNode(home, { nowMs });
  } catch (err) {
    checks.push({ check: 'store', level: 'fail', detail: nameDiskError(err, home) ?? (err instanceof Error ? err.message : String(err)) });
    return report(null);
  }
  try {
    const integrity = node.store.quickCheck();
    checks.push({ check: 'store', level: integrity === 'ok' ? 'ok' : 'fail', detail: `schema ${node.store.schemaVersion()}, integrity ${integrity}` });
    const waitingFor = (host: string | null): number =>
      node.store.outbox
        .queuedAges(node.nowMs())
        .filter((g) => host === null || g.peer_host === host)
        .reduce((n, g) => n + g.count, 0);
    checks.push(await daemonCheck(node, waitingFor(null)));
    const peers = node.store.peers.list();
    if (peers.length === 0) checks.push({ check: 'peers', level: 'warn', detail: 'no paired host (agentmbx pair / agentmbx join)' });
    checks.push(...(await Promise.all(peers.map((p) => peerCheck(node, p.host, waitingFor(p.host))))));
    checks.push(...outboxChecks(node));
    checks.push(...guardChecks(node));
    checks.push(...(await relayChecks(node, DOCTOR_CALL_TIMEOUT_MS)));
    return report(node.config.host);
  } finally {
    closeNode(node);
  }
}
