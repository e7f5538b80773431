// Hosts with a token command on a real hosted relay (enrolment_authority "account-token") and a
// local issuer: enrolment with the account-token proof, the bearer on every signed call, refresh
// before expiry, a refused token dropped, a failing command (token-failed), a deny-list entry
// (denied) and an unavailable issuer in doctor and the state, a host-key rotation, and what
// `relay set` keeps of the command.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runDoctor, type DoctorReport } from '../../../src/host/doctor.ts';
import { homePaths } from '../../../src/host/core/identity.ts';
import { closeNode, openNode } from '../../../src/host/open-node.ts';
import { listInbox } from '../../../src/host/mailbox.ts';
import { backoffMs } from '../../../src/host/core/outbox-pace.ts';
import { applyPeerRotation, rotateHost } from '../../../src/host/core/rotation.ts';
import { sendMail } from '../../../src/host/send.ts';
import { fingerprint } from '../../../src/protocol/fingerprint.ts';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { cloudKeyThumbprint } from '../../../src/protocol/records/cloud-key.ts';
import { cloudKeyOf } from '../../../src/host/relay-client/access.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import { JWKS_STALE_LIMIT_MS } from '../../../src/relay/authority/jwks-cache.ts';
import { tempDir } from '../../helpers/processes.ts';
import { startTestRelay } from '../../helpers/relay-fixture.ts';
import { rawHost, relayed, tick, tickUntilRow } from './relay-fixtures.ts';
import { AUDIENCE, enrolmentOf, hostedWorld, type HostedWorld } from './token-fixtures.ts';

const MINUTE = 60_000;

function relayCheck(report: DoctorReport) {
  return report.checks.find((c) => c.check === 'relay') ?? assert.fail(`no relay check: ${JSON.stringify(report.checks)}`);
}

async function doctorOf(world: HostedWorld, host: 'a' | 'b'): Promise<DoctorReport> {
  return runDoctor(world[host].node.home, () => world.clock.now);
}

/** Mail from a to b and back, each until the other host holds it in its inbox. */
async function mailBothWays(world: HostedWorld, subject: string): Promise<void> {
  const there = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject, body: 'x' });
  await tickUntilRow(world, world.a, there.id, 'relay-accepted');
  await tick(world.b);
  assert.ok(
    listInbox(world.b.node, 'bob').some((m) => m.id === there.id),
    `b did not get ${subject}: ${world.b.log.join(' | ')}`,
  );
  const back = sendMail(world.b.node, { from: 'bob', to: ['ann@alpha'], subject: `re: ${subject}`, body: 'y' });
  await tickUntilRow(world, world.b, back.id, 'relay-accepted');
  await tick(world.a);
  assert.ok(
    listInbox(world.a.node, 'ann').some((m) => m.id === back.id),
    `a did not get re: ${subject}: ${world.a.log.join(' | ')}`,
  );
}

test('hosts with a token command enrol under their account and mail both ways; the command gets its env; without it the relay says TOKEN_REQUIRED', async () => {
  const world = await hostedWorld();
  const cloudKey = homePaths(world.a.node.home).cloudKey;
  assert.equal(statSync(cloudKey).mode & 0o777, 0o600, 'relay set --token-command made the cloud key, private');
  await tick(world.a);
  await tick(world.b);
  assert.equal(world.a.node.store.relay.get()?.state, 'ok', world.a.log.join(' | '));
  const enrolment = await enrolmentOf(world.relay, world.a.node);
  assert.deepEqual([enrolment?.account, enrolment?.authorizedBy], ['acct-1', 'account-token']);
  assert.equal(world.mint.runs.get('alpha'), 1, 'one token served enrolment and every call of the tick');

  const { jwk, jkt } = await cloudKeyOf(world.a.node);
  assert.deepEqual(world.mint.env.get('alpha'), {
    relay: world.relay.url,
    host: 'alpha',
    fp: fingerprint(world.a.node.keys.hostKey.publicKey),
    jkt,
    key: JSON.stringify(jwk),
  });
  assert.equal(
    await cloudKeyThumbprint(JSON.parse(world.mint.env.get('alpha')?.key ?? '{}') as typeof jwk),
    jkt,
    'AGENTMBX_CLOUD_JKT is the thumbprint of AGENTMBX_CLOUD_KEY',
  );

  // every hop of the mail flow is a signed call the hosted relay takes only with the bearer token
  await mailBothWays(world, 'hello');
  const storeBytes = ['', '-wal']
    .map((suffix) => (existsSync(homePaths(world.a.node.home).store + suffix) ? readFileSync(homePaths(world.a.node.home).store + suffix, 'latin1') : ''))
    .join('');
  assert.ok(world.mint.tokens.length >= 1);
  for (const token of world.mint.tokens) assert.ok(!storeBytes.includes(token.split('.')[2] ?? token), 'tokens are kept in memory only, never in the store');
  const ok = relayCheck(await doctorOf(world, 'a'));
  assert.equal(ok.level, 'ok', ok.detail);
  assert.match(ok.detail, /account token via command/);

  const bare = await rawHost(world, world.a.node).api.pull(0);
  assert.deepEqual([bare.status, bare.body['code']], [401, 'TOKEN_REQUIRED'], 'a call without the bearer is refused');
  const kept = await setRelay(world.a.node, world.relay.url);
  assert.equal(kept.token_command, true, 'relay set for the same URL keeps the command');
  const removed = await setRelay(world.a.node, world.relay.url, undefined, null);
  assert.equal(removed.token_command, false);
  await tick(world.a);
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'denied');
  assert.match(relay?.detail ?? '', /needs an account-token proof.*run agentmbx relay set .* --token-command "<cmd>"/);
  const doctor = relayCheck(await doctorOf(world, 'a'));
  assert.equal(doctor.level, 'fail');
  assert.match(doctor.detail, /^denied: .*--token-command/);
});

test('the token is refreshed before it expires: the command runs again once less than a fifth of its life is left', async () => {
  const world = await hostedWorld();
  await tick(world.a);
  await tick(world.b);
  assert.equal(world.mint.runs.get('alpha'), 1);
  world.clock.now += 7 * MINUTE; // 10-minute tokens: refreshed 2 minutes before exp
  await tick(world.a);
  assert.equal(world.mint.runs.get('alpha'), 1, 'still fresh: no run');
  world.clock.now += MINUTE + 1_000;
  await tick(world.a);
  assert.equal(world.mint.runs.get('alpha'), 2, 'past exp − 2 min: the command ran again');
  world.clock.now += 5 * MINUTE; // the first token has expired: only the refreshed one works now
  await mailBothWays(world, 'after the refresh');
  assert.equal(world.a.node.store.relay.get()?.state, 'ok');
});

test('a token the relay refuses on a hop (TOKEN_INVALID) is dropped with the session and the command runs again', async () => {
  const world = await hostedWorld();
  await tick(world.a);
  await tick(world.b);
  world.mint.mode = 'other-jkt'; // the issuer binds the next token to a cloud key the host does not hold
  world.clock.now += 8 * MINUTE + 1_000;
  await tick(world.a);
  assert.equal(world.mint.runs.get('alpha'), 2);
  assert.ok(
    world.a.log.some((l) => /relay pull answered HTTP 401/.test(l)),
    world.a.log.join(' | '),
  );
  assert.equal(world.a.node.store.relay.get()?.session, null, 'the session is dropped');
  world.mint.mode = 'ok';
  await tick(world.a);
  assert.equal(world.mint.runs.get('alpha'), 3, 'the refused token was not used again');
  assert.equal(world.a.node.store.relay.get()?.state, 'ok', world.a.log.join(' | '));
  await mailBothWays(world, 'with a good token again');
});

test('a failing token command: state token-failed, doctor shows the one-line reason, never the token', async () => {
  const world = await hostedWorld();
  const secret = await world.issuer.mint(AUDIENCE, { sub: 's', account: 'acct-1', client_id: 'c', cnf: { jkt: 'x' } });
  const runs = join(tempDir('mbx-token-runs-'), 'runs');
  await setRelay(
    world.a.node,
    world.relay.url,
    undefined,
    `echo run >> '${runs}'; echo 'contacting accounts' >&2; echo "session expired, cached token ${secret} rejected" >&2; exit 3`,
  );
  await tick(world.a);
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'token-failed');
  assert.equal(relay?.detail, 'the token command failed: session expired, cached token [token] rejected');
  await tick(world.a);
  assert.equal(readFileSync(runs, 'utf8'), 'run\n', 'a failed command backs off: the next tick does not run it again');
  world.clock.now += backoffMs(0);
  await tick(world.a);
  assert.equal(readFileSync(runs, 'utf8'), 'run\nrun\n', 'after the backoff it runs again');
  const report = await doctorOf(world, 'a');
  const check = relayCheck(report);
  assert.equal(check.level, 'fail');
  assert.match(check.detail, /^token-failed: the token command failed: session expired, cached token \[token\] rejected/);
  const everything = JSON.stringify({ report, log: world.a.log, detail: relay?.detail });
  assert.ok(!everything.includes(secret), 'the token appears nowhere');
  assert.ok(!everything.includes(secret.split('.')[1] ?? secret), 'not even its payload');
});

test("a deny-list entry for the host: state denied, and doctor shows the relay's reason", async () => {
  const world = await hostedWorld();
  await tick(world.a);
  await tick(world.b);
  const admin = await world.issuer.mint(AUDIENCE, { sub: 'ops', scope: 'relay:deny' });
  const until = new Date(world.clock.now + 24 * 60 * MINUTE).toISOString();
  const answer = await fetch(new URL('/v2/relay/admin/deny', world.relay.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
    body: JSON.stringify({ entries: [{ host_fp: fingerprint(world.a.node.keys.hostKey.publicKey), reason: 'laptop reported stolen', until }] }),
  });
  assert.equal(answer.status, 200);
  await tick(world.a); // the pull is refused (403 DENIED): the session is dropped
  await tick(world.a); // enrolling again is refused with the reason
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'denied', world.a.log.join(' | '));
  assert.match(relay?.detail ?? '', /revoked until .*: laptop reported stolen/);
  const check = relayCheck(await doctorOf(world, 'a'));
  assert.equal(check.level, 'fail');
  assert.match(check.detail, /^denied: .*laptop reported stolen/);
  await tick(world.b);
  assert.equal(world.b.node.store.relay.get()?.state, 'ok', 'the other host is untouched');
});

test('after a host-key rotation the host enrols again with a new cloud-key certificate and keeps working', async () => {
  const world = await hostedWorld();
  await tick(world.b);
  await mailBothWays(world, 'before');
  const { jkt } = await cloudKeyOf(world.a.node);
  const rotation = rotateHost(world.a.node);
  const sent = sendMail(world.a.node, { from: 'ann', to: ['bob@beta'], subject: 'under the new key', body: 'x' });
  await tickUntilRow(world, world.a, sent.id, 'relay-accepted');
  assert.equal(world.a.node.store.relay.get()?.state, 'ok', world.a.log.join(' | '));
  const enrolment = await enrolmentOf(world.relay, world.a.node);
  assert.deepEqual([enrolment?.account, enrolment?.authorizedBy], ['acct-1', 'account-token']);
  const bound = await world.relay.service.core.context.store.read((tx) => tx.accounts.cloudKeyOf(world.a.node.keys.hostKey.publicKey));
  assert.equal(bound, jkt, 'the same cloud key, now certified by the new host key');
  assert.equal((await cloudKeyOf(world.a.node)).jkt, jkt, 'the rotation kept the cloud key');
  assert.equal(applyPeerRotation(world.b.node, rotation), 'rotated'); // the record reaches b (over the LAN)
  await tick(world.b);
  assert.ok(
    listInbox(world.b.node, 'bob').some((m) => m.id === sent.id),
    world.b.log.join(' | '),
  );
  await mailBothWays(world, 'after');
  assert.equal(relayCheck(await doctorOf(world, 'a')).level, 'ok');
});

test('relay set keeps the command for the same URL and drops it for another; a changed command drops the session', async () => {
  const world = await hostedWorld();
  await tick(world.a);
  assert.notEqual(world.a.node.store.relay.get()?.session, null);
  await setRelay(world.a.node, world.relay.url, undefined, `${world.mint.command} --again`);
  const changed = world.a.node.store.relay.get();
  assert.deepEqual(
    [changed?.session, changed?.state, changed?.token_command],
    [null, 'new', `${world.mint.command} --again`],
    'enrol again with the new command',
  );
  await tick(world.a);
  assert.equal(world.mint.runs.get('alpha'), 2, 'the new command ran');
  // the relay changed its key: confirming it with --key pins it anew and keeps the command
  const relayFp = fingerprint(changed?.relay_pubkey ?? '');
  world.a.node.store.relay.update({ relay_pubkey: generateSigningKey().publicKey });
  await assert.rejects(setRelay(world.a.node, world.relay.url), /changed its key/);
  const confirmed = await setRelay(world.a.node, world.relay.url, relayFp);
  assert.equal(confirmed.token_command, true);
  assert.equal(world.a.node.store.relay.get()?.token_command, `${world.mint.command} --again`);
  await assert.rejects(setRelay(world.a.node, world.relay.url, undefined, '  '), /token command must be/);
  await assert.rejects(setRelay(world.a.node, world.relay.url, undefined, 'get-token\0'), /without NUL/);
  const other = await startTestRelay({ clock: world.clock });
  assert.equal((await setRelay(world.a.node, other.url)).token_command, false, 'another relay starts without a command');
  assert.equal(world.a.node.store.relay.get()?.token_command, null);
});

test("the issuer's keys unavailable for over an hour: enrolment answers 503, shown as unreachable with the relay's reason", async () => {
  const world = await hostedWorld();
  await tick(world.b); // the relay fetched the issuer's keys
  world.issuer.down = true;
  world.clock.now += JWKS_STALE_LIMIT_MS + MINUTE;
  await tick(world.a);
  const relay = world.a.node.store.relay.get();
  assert.equal(relay?.state, 'unreachable', world.a.log.join(' | '));
  assert.match(relay?.detail ?? '', /enrolment refused: HTTP 503: .*could not be fetched for over an hour/);
});

test('a cloud key that cannot be read is token-failed in the tick and in doctor, not a failed tick', async () => {
  const world = await hostedWorld();
  writeFileSync(homePaths(world.a.node.home).cloudKey, 'not a key\n');
  // a process starting now (the daemon after a restart): the key is read on first need
  const node = openNode(world.a.node.home, { nowMs: () => world.clock.now });
  try {
    await tick(relayed(node));
    const relay = node.store.relay.get();
    assert.equal(relay?.state, 'token-failed');
    assert.match(relay?.detail ?? '', /^the cloud key cannot be used: .*cloud\.key does not hold a valid Ed25519 key/);
  } finally {
    closeNode(node);
  }
  const check = relayCheck(await doctorOf(world, 'a'));
  assert.equal(check.level, 'fail');
  assert.match(check.detail, /^token-failed: the cloud key cannot be used/);
});
