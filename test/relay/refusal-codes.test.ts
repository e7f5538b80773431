// Every refusal code of the catalogue, driven through the real relay over HTTP: the answer has the
// catalogue's status, names the code in x-mbx-refusal, and carries `code` in its body exactly for
// the codes that always had it there. Codes that need a setup another test owns are listed with it.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { signSenderList, type SenderListRecord } from '../../src/protocol/records/sender-list.ts';
import { REFUSAL_HEADER, REFUSALS, type RefusalCode } from '../../src/protocol/relay-api/refusals.ts';
import type { EnrolmentAuthority, EnrolmentDecision } from '../../src/relay/authority/enrolment-authority.ts';
import { enrolledHost, testHost, signedRotation, startTestRelay, type TestHost, type TestRelay } from '../helpers/relay-fixture.ts';

/** Codes proved through the real HTTP face by another test, which owns their setup. */
const PROVED_ELSEWHERE: Partial<Record<RefusalCode, string>> = {
  REQUEST_TIMEOUT: 'test/relay/http-layer.test.ts (a clientError raised on the real socket)',
  CHALLENGES_FULL: 'test/relay/bounded-state.test.ts (the table filled to MAX_OPEN_CHALLENGES)',
  STORE_BUSY: 'test/relay/http-layer.test.ts (the real store with its transaction queue full)',
  STORE_FULL: 'test/drills/relay-disk-faults.test.ts (a full tmpfs)',
  STORE_IO: 'test/drills/relay-disk-faults.test.ts (an I/O fault point)',
  STORE_SYNC_FAILED: 'test/drills/relay-disk-faults.test.ts (a failed fsync)',
  TOKEN_REQUIRED: 'test/relay/hosted-relay.test.ts (an account-token relay and issuer)',
  TOKEN_INVALID: 'test/relay/hosted-relay.test.ts',
  BAD_DENY_ENTRIES: 'test/relay/hosted-relay.test.ts',
  DENY_LIST_FULL: 'not driven: it needs 100,000 live deny entries; the core throws it like every other code',
};

interface Seen {
  status: number;
  header: string | null;
  body: Record<string, unknown>;
}

const seen = new Map<RefusalCode, Seen>();

function expectRefusal(code: RefusalCode, answer: Seen): void {
  const entry = REFUSALS[code];
  assert.equal(answer.status, entry.status, `${code}: status`);
  assert.equal(answer.header, code, `${code}: ${REFUSAL_HEADER}`);
  assert.equal(typeof answer.body['error'], 'string', `${code}: error sentence`);
  assert.equal(answer.body['code'], 'codeInBody' in entry ? code : undefined, `${code}: code in the body only where it always was`);
  seen.set(code, answer);
}

async function fetched(relay: TestRelay, method: string, path: string, body?: string): Promise<Seen> {
  const response = await fetch(`${relay.url}${path}`, { method, ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }) });
  return { status: response.status, header: response.headers.get(REFUSAL_HEADER), body: (await response.json()) as Record<string, unknown> };
}

async function viaApi(call: Promise<{ status: number; body: unknown; refusalCode: string | null }>): Promise<Seen> {
  const answer = await call;
  return { status: answer.status, header: answer.refusalCode, body: answer.body as Record<string, unknown> };
}

/** Raw bytes to the relay's port; the answer's status, x-mbx-refusal header and JSON body. */
function rawExchange(relay: TestRelay, bytes: string): Promise<Seen> {
  const { port } = new URL(relay.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const header = /^x-mbx-refusal: *(\S+)/im.exec(head)?.[1] ?? null;
      resolve({ status: Number(head.split(' ')[1]), header, body: JSON.parse(body) as Record<string, unknown> });
    });
    socket.end(bytes);
  });
}

function senderList(host: TestHost, iatMs: number, signer = host.key): { list: SenderListRecord; sig: string } {
  const list: SenderListRecord = { v: 1, type: 'relay-senders', host_pubkey: host.key.publicKey, senders: [], iat: new Date(iatMs).toISOString() };
  return { list, sig: signSenderList(list, signer) };
}

test('the HTTP layer, the hop, enrolment, push, pull, ack, sender lists, rotation and enc-key ads: each code as catalogued', { timeout: 60_000 }, async () => {
  const relay = await startTestRelay({ maxLiveEnrolments: 3, limits: { max_batch: 2 } });
  const now = relay.clock.nowMs();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');

  expectRefusal('BAD_JSON', await viaApi(a.api.call('POST', '/v2/relay/items', 'not json')));
  expectRefusal('BODY_TOO_LARGE', await fetched(relay, 'POST', '/v1/relay/challenge', JSON.stringify({ pad: 'x'.repeat(9000) })));
  expectRefusal('NOT_FOUND', await fetched(relay, 'GET', '/nowhere'));
  expectRefusal('METHOD_NOT_ALLOWED', await fetched(relay, 'DELETE', '/v2/relay/items'));
  expectRefusal('MISSING_HOST_HEADER', await rawExchange(relay, 'GET /v2/relay/info HTTP/1.1\r\nconnection: close\r\n\r\n'));
  expectRefusal('MALFORMED_HTTP', await rawExchange(relay, 'NOT HTTP AT ALL\r\n\r\n'));
  expectRefusal('HEADERS_TOO_LARGE', await rawExchange(relay, `GET /v2/relay/info HTTP/1.1\r\nhost: x\r\nx-big: ${'y'.repeat(20_000)}\r\n\r\n`));
  expectRefusal('MALFORMED_REQUEST', await rawExchange(relay, 'GET /v2/relay/%zz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'));
  expectRefusal('BAD_HOP', await fetched(relay, 'GET', '/v2/relay/items'));

  // enrolment
  expectRefusal('BAD_ENROLMENT', await fetched(relay, 'POST', '/v1/relay/challenge', JSON.stringify({ host: 'no spaces allowed', pubkey: a.key.publicKey })));
  const stranger = testHost(relay, 'stranger');
  const enrolBody = (host: TestHost, challenge: string, signer = host.key) =>
    JSON.stringify({
      host: host.name,
      pubkey: host.key.publicKey,
      owner_fp: '',
      sig: signer.sign(canonicalJson({ v: 1, challenge, host: host.name, pubkey: host.key.publicKey, owner_fp: '' })),
    });
  expectRefusal('NO_CHALLENGE', await fetched(relay, 'POST', '/v1/relay/enrol', enrolBody(stranger, 'never issued')));
  const challenged = await fetched(relay, 'POST', '/v1/relay/challenge', JSON.stringify({ host: stranger.name, pubkey: stranger.key.publicKey }));
  expectRefusal(
    'BAD_ENROLMENT_SIGNATURE',
    await fetched(relay, 'POST', '/v1/relay/enrol', enrolBody(stranger, String(challenged.body['challenge']), generateSigningKey())),
  );

  // push, pull, ack, v1 ack
  expectRefusal('BAD_PUSH', await viaApi(a.api.call('POST', '/v2/relay/items', {})));
  expectRefusal('BATCH_TOO_LARGE', await viaApi(a.api.push([{}, {}, {}])));
  expectRefusal('BAD_PULL', await viaApi(a.api.call('GET', '/v2/relay/items?after=x')));
  expectRefusal('EPOCH', await viaApi(a.api.pull(0, undefined, 'an old epoch')));
  expectRefusal('BAD_ACK', await viaApi(a.api.ack(-1, relay.service.epoch)));
  expectRefusal('BAD_V1_ACK', await viaApi(a.api.call('POST', '/v1/relay/ack', { cursor: 'x' })));

  // sender lists
  const other = senderList(b, now);
  expectRefusal('SENDER_LIST_NOT_OWN', await viaApi(a.api.publishSenders(other.list, other.sig)));
  const ahead = senderList(a, now + 3_600_000);
  expectRefusal('SENDER_LIST_IAT_AHEAD', await viaApi(a.api.publishSenders(ahead.list, ahead.sig)));
  const forged = senderList(a, now, generateSigningKey());
  expectRefusal('SENDER_LIST_BAD_SIGNATURE', await viaApi(a.api.publishSenders(forged.list, forged.sig)));
  expectRefusal('SENDER_LIST_REFUSED', await viaApi(a.api.publishSenders({}, 'x')));
  const own = senderList(a, now);
  assert.equal((await a.api.publishSenders(own.list, own.sig)).status, 200);
  expectRefusal('SENDER_LIST_NOT_NEWER', await viaApi(a.api.publishSenders(own.list, own.sig)));

  // enc-key ads
  expectRefusal('ENC_AD_REFUSED', await viaApi(a.api.publishEncAd({}, 'x')));
  expectRefusal('ENC_AD_V1_RETIRED', await viaApi(a.api.publishEncAdV1('x', 'x')));
  expectRefusal('BAD_LOOKUP', await viaApi(a.api.call('GET', '/v2/relay/enc-key?pubkey=not-a-key')));
  expectRefusal('UNKNOWN_HOST', await viaApi(a.api.encAd(b.key.publicKey)));

  // rotation: a moves to a new key; its old key is revoked
  expectRefusal('BAD_ROTATION', await viaApi(a.api.rotate({})));
  expectRefusal('ROTATION_UNKNOWN_KEY', await viaApi(stranger.api.rotate(signedRotation(stranger.name, stranger.key, generateSigningKey(), now))));
  const next = generateSigningKey();
  assert.equal((await a.api.rotate(signedRotation(a.name, a.key, next, now))).status, 200);
  expectRefusal('ROTATION_KEY_REVOKED', await viaApi(b.api.rotate(signedRotation(b.name, b.key, a.key, now))));
  expectRefusal('REVOKED', await viaApi(a.api.enrol()));

  // capacity: three live enrolments (laptop's new key, desk, one more), then full
  await enrolledHost(relay, 'third');
  expectRefusal('ENROLMENTS_FULL', await viaApi(testHost(relay, 'fourth').api.enrol()));
  // the per-address budget (enrol_per_minute) runs out; no clock moves, so it stays out
  let rate: Seen | null = null;
  for (let i = 0; i < 100 && rate === null; i++) {
    const answer = await fetched(relay, 'POST', '/v1/relay/challenge', '{}');
    if (answer.status === 429) rate = answer;
  }
  expectRefusal('RATE', rate ?? assert.fail('never rate limited'));
});

/** An enrolment authority whose next decision the test sets; `throw` fails like a bug would. */
class ScriptedAuthority implements EnrolmentAuthority {
  readonly name = 'scripted';
  readonly strength = 1;
  next: EnrolmentDecision | 'throw' = { ok: true, account: 'acct', org: null };
  authorize(): Promise<EnrolmentDecision> {
    const decision = this.next;
    return decision === 'throw' ? Promise.reject(new Error('a bug in the authority')) : Promise.resolve(decision);
  }
}

test("the authority's answers: DENIED, AUTHORITY_UNAVAILABLE, NAME_TAKEN, and INTERNAL for a failure nobody expected", async () => {
  const authority = new ScriptedAuthority();
  const relay = await startTestRelay({ authority });
  const first = testHost(relay, 'macbook');
  assert.equal((await first.api.enrol()).status, 200);
  expectRefusal('NAME_TAKEN', await viaApi(testHost(relay, 'macbook').api.enrol()));
  authority.next = { ok: false, reason: 'not on the list' };
  expectRefusal('DENIED', await viaApi(testHost(relay, 'a').api.enrol()));
  authority.next = { ok: false, reason: 'the issuer is down', unavailable: true };
  expectRefusal('AUTHORITY_UNAVAILABLE', await viaApi(testHost(relay, 'b').api.enrol()));
  authority.next = 'throw';
  const internal = await viaApi(testHost(relay, 'c').api.enrol());
  expectRefusal('INTERNAL', internal);
  assert.deepEqual(internal.body, { error: 'internal error' }, 'no stack, no detail');
});

test('every catalogued code was driven above or is proved by the test named for it', () => {
  for (const code of Object.keys(REFUSALS) as RefusalCode[]) {
    assert.ok(seen.has(code) !== (PROVED_ELSEWHERE[code] !== undefined), `${code}: driven here or proved elsewhere, exactly one`);
  }
});
