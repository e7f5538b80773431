// receive(envelope, via): each rule on its own, dedup, and the recipients on this host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateEncKeyPair, generateSigningKey } from '../../src/protocol/keys.ts';
import { sealEnvelopeBody } from '../../src/protocol/seal.ts';
import { signEnvelope, type EnvelopeV3, type UnsignedEnvelopeV3 } from '../../src/protocol/records/envelope.ts';
import { receive, type Via } from '../../src/host/core/receive.ts';
import { sendMail } from '../../src/host/send.ts';
import { listInbox } from '../../src/host/mailbox.ts';
import { lanCall } from '../../src/host/transport/lan/client.ts';
import type { HostNode } from '../../src/host/core/node.ts';
import { runCli } from '../helpers/processes.ts';
import { makeHost, pairedHosts, pin, serveLan } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

function wireOf(a: HostNode, id: string): EnvelopeV3 {
  const row = a.store.outbox.forMessage(id)[0];
  assert.ok(row !== undefined);
  return JSON.parse(row.wire) as EnvelopeV3;
}

function viaOf(node: HostNode): Via {
  return { transport: 'test', peerPubkey: node.keys.hostKey.publicKey };
}

function unsigned(env: EnvelopeV3): UnsignedEnvelopeV3 {
  const { sig: _sig, ...rest } = env;
  return rest;
}

test('a sealed, signed envelope from a paired host is accepted once, then a duplicate', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'hello' });
  const env = wireOf(a, id);
  assert.equal(receive(b, env, viaOf(a)), 'accepted');
  assert.equal(receive(b, env, viaOf(a)), 'duplicate');
  assert.equal(listInbox(b, 'bob').length, 1);
  // Re-sent over the LAN as well: still a duplicate, still one message.
  const answer = await lanCall(a.store.peers.get('beta')?.addr ?? '', 'POST', '/v2/envelopes', { envelopes: [env] }, a);
  assert.deepEqual(answer.body, { results: [{ id, result: 'duplicate', status: 'duplicate' }] });
  assert.equal(listInbox(b, 'bob').length, 1);
});

test('shape limits are refused', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const env = wireOf(a, id);
  assert.match(receive(b, {}, viaOf(a)), /^rejected:bad envelope: /);
  const long = signEnvelope({ ...unsigned(env), subject: 'x'.repeat(201) }, 'alpha', a.keys.hostKey);
  assert.equal(receive(b, long, viaOf(a)), 'rejected:bad envelope: subject too long');
  const manyTo = signEnvelope({ ...unsigned(env), to: Array.from({ length: 101 }, () => 'bob@beta') }, 'alpha', a.keys.hostKey);
  assert.equal(receive(b, manyTo, viaOf(a)), 'rejected:bad envelope: too many to addresses');
  const ctl = signEnvelope({ ...unsigned(env), subject: 'a\u0007b' }, 'alpha', a.keys.hostKey);
  assert.equal(receive(b, ctl, viaOf(a)), 'rejected:bad envelope: control characters in subject');
  assert.throws(
    () => sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'x'.repeat(201), body: '' }),
    /the subject is 201 characters: a subject is 1 to 200 characters/,
  );
  assert.throws(() => sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x'.repeat(256 * 1024 + 1) }), /over the 262144-byte limit/);
});

test('over the LAN, an envelope carrying every optional meta member is accepted and read --json shows them', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'hi @bob #ops' });
  const env = wireOf(a, id);
  assert.deepEqual(env.meta, { mentions: ['bob'], directives: [], tags: ['ops'], task_refs: [] });
  const meta: EnvelopeV3['meta'] = {
    ...env.meta,
    origin: 'external',
    hop: 3,
    project: 'agentmbx',
    project_key: 'p-1',
    local_names: ['ann', 'al'],
    sender_verification: 'leased',
    x_future: { kept: true },
  };
  const signed = signEnvelope({ ...unsigned(env), meta }, 'alpha', a.keys.hostKey);
  const answer = await lanCall(a.store.peers.get('beta')?.addr ?? '', 'POST', '/v2/envelopes', { envelopes: [signed] }, a);
  assert.deepEqual(answer.body, { results: [{ id, result: 'accepted', status: 'accepted' }] });
  assert.deepEqual((JSON.parse(b.store.mail.message(id)?.wire ?? '{}') as EnvelopeV3).meta, meta, 'the stored wire keeps them');
  const read = await runCli(['read', id, '--agent', 'bob', '--json'], { MBX_HOME: b.home });
  assert.equal(read.code, 0, read.stderr);
  const shown = JSON.parse(read.stdout) as { body: string; meta: unknown };
  assert.equal(shown.body, 'hi @bob #ops');
  assert.deepEqual(shown.meta, meta);
});

test('only an approved peer, signing as itself, is accepted', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const c = makeHost('gamma', clock, ['cy']);
  pin(b, c, 'http://127.0.0.1:1');
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const env = wireOf(a, id);
  const stranger = generateSigningKey();
  assert.equal(receive(b, env, { transport: 'test', peerPubkey: stranger.publicKey }), 'rejected:sender is not a paired host');
  // gamma is paired but hands over alpha's envelope: the signer and from do not match the caller.
  assert.equal(receive(b, env, viaOf(c)), 'rejected:envelope is not from the sending host');
  // gamma signs an envelope claiming to be from alpha.
  const forged = signEnvelope(unsigned(env), 'gamma', c.keys.hostKey);
  assert.equal(receive(b, forged, viaOf(c)), 'rejected:envelope is not from the sending host');
});

test('an unsealed body is refused even when signed', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const plain = signEnvelope({ ...unsigned(wireOf(a, id)), enc: null, body: 'plaintext' }, 'alpha', a.keys.hostKey);
  assert.equal(receive(b, plain, viaOf(a)), 'rejected:envelope body is not sealed');
});

test('tampering with the body or any signed field, or a wrong key, fails the signature', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 'subject', body: 'the body' });
  const env = wireOf(a, id);
  const resealed = sealEnvelopeBody({ ...unsigned(env), body: 'other body', enc: null }, b.keys.enc.publicKey);
  const tampered: Array<[string, EnvelopeV3]> = [
    ['body', { ...env, body: resealed.body, enc: resealed.enc }],
    ['subject', { ...env, subject: 'changed' }],
    ['to', { ...env, to: ['bea@beta'] }],
    ['thread', { ...env, thread: 'other-thread' }],
    ['kind', { ...env, kind: 'alert' }],
    ['ts', { ...env, ts: '2026-12-02T12:00:01.000Z' }],
    ['reply_to', { ...env, reply_to: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }],
    ['needs_reply', { ...env, needs_reply: true }],
    ['refs', { ...env, refs: ['x'] }],
    ['meta', { ...env, meta: { ...env.meta, x: 1 } }],
  ];
  for (const [field, copy] of tampered) assert.equal(receive(b, copy, viaOf(a)), 'rejected:bad signature', field);
  const otherKey = generateSigningKey();
  assert.equal(receive(b, signEnvelope(unsigned(env), 'alpha', otherKey), viaOf(a)), 'rejected:bad signature', 'wrong key');
  assert.equal(receive(b, env, viaOf(a)), 'accepted', 'the untouched envelope still passes');
});

test('a body sealed to another enc key cannot be opened', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const wrong = sealEnvelopeBody({ ...unsigned(wireOf(a, id)), body: 'x', enc: null }, generateEncKeyPair().publicKey);
  assert.equal(receive(b, signEnvelope(wrong, 'alpha', a.keys.hostKey), viaOf(a)), 'rejected:cannot open the sealed body');
});

test('recipients here: unknown names are refused; roles and * with no match reach the owner', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const { id } = sendMail(a, { from: 'ann', to: ['bob@beta'], subject: 's', body: 'x' });
  const env = wireOf(a, id);
  const reroute = (to: string[]): EnvelopeV3 =>
    signEnvelope(
      sealEnvelopeBody({ ...unsigned(env), id: `${id.slice(0, 25)}${to.length}`, to, body: 'x', enc: null }, b.keys.enc.publicKey),
      'alpha',
      a.keys.hostKey,
    );
  assert.equal(receive(b, reroute(['nobody@beta']), viaOf(a)), 'rejected:unknown recipient nobody@beta');
  assert.equal(receive(b, reroute(['role:ops', 'ann@alpha']), viaOf(a)), 'accepted');
  assert.equal(listInbox(b, 'owner').length, 1);
  b.store.mail.addAgent('ops-bot', 'ops', clock.now);
  assert.equal(receive(b, reroute(['role:ops', 'xx@alpha', 'yy@alpha']), viaOf(a)), 'accepted');
  assert.equal(listInbox(b, 'ops-bot').length, 1);
});

test('sending refuses unknown agents and hosts, and hosts without an enc key', async () => {
  const clock = new TestClock();
  const { a } = await pairedHosts(clock);
  assert.throws(() => sendMail(a, { from: 'nobody', to: ['bob@beta'], subject: 's', body: '' }), /no agent "nobody"/);
  assert.throws(() => sendMail(a, { from: 'ann', to: ['bob@gamma'], subject: 's', body: '' }), /not paired/);
  assert.throws(() => sendMail(a, { from: 'ann', to: ['zed'], subject: 's', body: '' }), /no agent "zed"/);
  const c = makeHost('gamma', clock, []);
  pin(a, c, await serveLan(c));
  a.store.peers.pin({ ...(a.store.peers.get('gamma') ?? assert.fail()), enc_pub: null, enc_sig: null }, clock.now);
  assert.throws(() => sendMail(a, { from: 'ann', to: ['cy@gamma'], subject: 's', body: '' }), /no enc key for host "gamma"/);
});
