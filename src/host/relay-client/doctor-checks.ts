// What doctor says about the relay: the pinned URL and key, whether the relay answers with that key,
// whether it knows this host under its current key (G13), the stored state, the relay rows per
// state with the oldest waiting one, the quarantine, and the last epoch change. With a token command
// (a hosted relay), doctor gets a token itself (running the command) and signs its info call with it.
import { ageText } from '../../common/time-text.ts';
import { fingerprint } from '../../protocol/fingerprint.ts';
import { readInfoAnswer } from '../../protocol/relay-api/info.ts';
import type { DoctorCheck } from '../core/doctor-check.ts';
import type { HostNode } from '../core/node.ts';
import { relayAccess, TokenCommandError } from './access.ts';
import type { RelayAnswer } from './api.ts';
import { CLOCK_SKEW_MAX_MS, clockSkewMs, relayApiFor } from './session.ts';
import { heldPullWaitS } from './held-wait.ts';

async function liveCheck(node: HostNode, timeoutMs: number): Promise<DoctorCheck> {
  const relay = node.store.relay.get();
  if (relay === undefined) return { check: 'relay', level: 'ok', detail: 'not set (LAN only)' };
  const waiting = (node.store.outbox.relayCountsByState()['relay-accepted'] ?? 0) + (node.store.outbox.relayCountsByState()['queued'] ?? 0);
  const pinned = fingerprint(relay.relay_pubkey);
  const epochNote = relay.epoch_changed_at === null ? '' : `; epoch last changed ${new Date(relay.epoch_changed_at).toISOString()}`;
  const fail = (state: string, detail: string): DoctorCheck => ({
    check: 'relay',
    level: 'fail',
    detail: `${state}: ${detail} (${relay.url}, pinned ${pinned})`,
  });
  if (relay.seen_pubkey !== null) {
    return fail(
      'key-mismatch',
      `the relay presents key ${fingerprint(relay.seen_pubkey)}; relay use is stopped until you confirm it with agentmbx relay set ${relay.url} --key ${fingerprint(relay.seen_pubkey)}`,
    );
  }
  const access = relayAccess(node, relay);
  let info: RelayAnswer;
  try {
    info = await relayApiFor(node, relay.url, timeoutMs, access).info();
  } catch (err) {
    if (err instanceof TokenCommandError) return fail('token-failed', err.message);
    const detail = `unreachable: ${err instanceof Error ? err.message : String(err)} (${relay.url}, pinned ${pinned})${waiting > 0 ? `; ${waiting} row(s) wait for it` : ''}`;
    return { check: 'relay', level: waiting > 0 ? 'fail' : 'warn', detail };
  }
  const reply = readInfoAnswer(info);
  if (!reply.ok) return fail('unreachable', `answers ${reply.error}, not as a v2 relay`);
  const body = reply.value;
  if (body.relay_pubkey !== relay.relay_pubkey) {
    return fail(
      'key-mismatch',
      `the relay presents another key (${fingerprint(body.relay_pubkey)}); confirm it with agentmbx relay set ${relay.url} --key <fingerprint>`,
    );
  }
  const hostPub = node.keys.hostKey.publicKey;
  const you = body.you ?? null;
  // Without `you` the relay did not take our signed call: the Date header tells whether clocks are why.
  const skew = clockSkewMs(info, node.nowMs());
  if (you === null && skew !== null && Math.abs(skew) > CLOCK_SKEW_MAX_MS)
    return fail('clock-skew', `the relay's clock is ${Math.round(skew / 1000)} s from ours`);
  if (you?.pubkey !== hostPub)
    return fail(
      relay.state === 'ok' || relay.state === 'new' ? 'enrol-failed' : relay.state,
      `not enrolled under this host's key ${fingerprint(hostPub)}${relay.detail === null ? ' (the daemon enrols on its next tick)' : `: ${relay.detail}`}`,
    );
  if (relay.state !== 'ok') return fail(relay.state, relay.detail ?? 'the daemon has not used the relay yet');
  // A relay that predates signed enc-key ads has no `enc_ad` in `you` at all (`null` is "holds none"):
  // the session published the v1 ad there, which such a relay does not report back.
  const predatesAds = !('enc_ad' in you);
  if (!predatesAds && you.enc_ad?.enc_pub !== node.keys.enc.publicKey) return fail('enc-ad-failed', 'the relay holds no current enc-key ad for this host');
  const via = access === null ? '' : ', account token via command';
  const adNote = predatesAds ? '; relay predates signed enc-key ads (v1 ad published)' : '';
  const waitS = heldPullWaitS(body.limits);
  const pullNote =
    waitS === null ? "; it holds no pulls: mail from it comes on the daemon's tick" : `; it holds pulls up to ${waitS} s: mail from it comes as it arrives`;
  return {
    check: 'relay',
    level: 'ok',
    detail: `ok: ${relay.url}, key ${pinned}, enrolled as ${fingerprint(hostPub)}${via}, epoch ${String(body.epoch)}${epochNote}${adNote}${pullNote}`,
  };
}

function rowsCheck(node: HostNode): DoctorCheck {
  const counts = node.store.outbox.relayCountsByState();
  const text = Object.entries(counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
  const oldest = node.store.outbox.oldestIn(['relay-accepted']);
  const oldestText =
    oldest === undefined
      ? ''
      : `; oldest waiting: ${oldest.kind} ${oldest.item_id} -> ${oldest.peer_host}, accepted by the relay (seq ${oldest.relay_seq}) ${ageText(node.nowMs() - (oldest.relay_accepted_at ?? oldest.created_at))} ago, waiting for its delivery receipt`;
  const givenUp = (counts['unconfirmed'] ?? 0) + (counts['expired'] ?? 0);
  return {
    check: 'relay rows',
    level: givenUp > 0 ? 'warn' : 'ok',
    detail: `${text === '' ? 'none' : text}${oldestText}${givenUp > 0 ? ' (senders of unconfirmed/expired mail were alerted)' : ''}`,
  };
}

/** The relay's checks; none for a host that never used a relay. */
export async function relayChecks(node: HostNode, timeoutMs: number): Promise<DoctorCheck[]> {
  if (node.store.relay.get() === undefined && Object.keys(node.store.outbox.relayCountsByState()).length === 0) return [];
  const checks = [await liveCheck(node, timeoutMs)];
  checks.push(rowsCheck(node));
  const quarantined = node.store.relay.quarantineCount();
  checks.push({
    check: 'relay quarantine',
    level: quarantined > 0 ? 'warn' : 'ok',
    detail: quarantined > 0 ? `${quarantined} refused item(s): agentmbx relay quarantine (show or dismiss each)` : 'empty',
  });
  return checks;
}
