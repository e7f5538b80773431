// The relay's HTTP layer (protocol.md §3, §7.15, §7.18): every answer is JSON, body caps are decided
// while the body streams in, and hostile input is a 4xx, never a 500 or a crash.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { toBase64 } from '../../src/protocol/base64.ts';
import { signRelayHop } from '../../src/protocol/relay-hop.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { DEFAULT_CONFIG } from '../../src/relay/config.ts';
import { createRelayCore } from '../../src/relay/core/relay-core.ts';
import { bindPort } from '../../src/relay/http/bound-port.ts';
import { buildRelayHttp } from '../../src/relay/http/server.ts';
import { MAX_QUEUED_TRANSACTIONS, openSqliteRelayStore } from '../../src/relay/store/sqlite/index.ts';
import { tempDir } from '../helpers/processes.ts';
import { enrolledHost, sealedEnvelope, startTestRelay, type TestRelay } from '../helpers/relay-fixture.ts';

const DEEP = 100_000;

async function raw(relay: TestRelay, method: string, path: string, body?: string) {
  const response = await fetch(`${relay.url}${path}`, { method, ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }) });
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    allow: response.headers.get('allow'),
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** Sends `text` over a raw TCP socket and resolves with everything the server wrote before closing. */
function rawSocket(relay: TestRelay, text: string): Promise<string> {
  const { hostname, port } = new URL(relay.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(text));
    let answer = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('close', () => resolve(answer));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(answer) : reject(err)));
  });
}

function parseHttp(answer: string): { status: number; body: unknown } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
  const text = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  return { status, body: JSON.parse(text) as unknown };
}

async function stillServing(relay: TestRelay): Promise<void> {
  assert.equal((await fetch(`${relay.url}/v2/relay/info`)).status, 200, 'the relay keeps serving');
}

test('an unknown path → 404 JSON; a known path with the wrong method → 405 JSON', async () => {
  const relay = await startTestRelay();
  for (const [method, path] of [
    ['GET', '/'],
    ['GET', '/v2/relay/nope'],
    ['POST', '/v1/relay/items'],
    ['GET', '/v2/relay/info/extra'],
  ]) {
    const answer = await raw(relay, method as string, path as string);
    assert.deepEqual([answer.status, answer.body], [404, { error: 'not found' }], `${method} ${path}`);
    assert.match(answer.type ?? '', /application\/json/);
  }
  for (const [method, path, allow] of [
    ['POST', '/v2/relay/info', 'GET'],
    ['GET', '/v1/relay/challenge', 'POST'],
    ['PUT', '/v2/relay/items', 'POST, GET'],
    ['DELETE', '/v2/relay/ack', 'POST'],
  ]) {
    const answer = await raw(relay, method as string, path as string);
    assert.deepEqual([answer.status, answer.body], [405, { error: 'method not allowed' }], `${method} ${path}`);
    assert.match(answer.type ?? '', /application\/json/);
    assert.equal(answer.allow, allow);
  }
  // methods no route takes at all (fetch cannot send TRACE)
  for (const [method, path, status] of [
    ['TRACE', '/v2/relay/info', 405],
    ['PROPFIND', '/v1/relay/enrol', 405],
    ['TRACE', '/v2/relay/nope', 404],
  ] as const) {
    const answer = parseHttp(await rawSocket(relay, `${method} ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
    assert.deepEqual(answer, { status, body: { error: status === 405 ? 'method not allowed' : 'not found' } }, `${method} ${path}`);
  }
});

test('a push body over max_body_bytes sent chunked without content-length → 413, decided while it streams', async () => {
  const cap = 256 * 1024;
  const relay = await startTestRelay({ config: { max_body_bytes: cap } });
  const { hostname, port } = new URL(relay.url);
  const chunk = Buffer.alloc(16 * 1024, 0x20);
  const answer = await new Promise<{ status: number; headers: Record<string, unknown>; body: string; sent: number }>((resolve, reject) => {
    let sent = 0;
    let answered = false;
    const req = request(
      {
        host: hostname,
        port: Number(port),
        method: 'POST',
        path: '/v2/relay/items',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        answered = true;
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sent });
        });
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!answered) reject(err);
    });
    // keep sending until the relay answers; a relay that buffered everything first would never answer
    const pump = (): void => {
      if (answered || req.destroyed) return;
      if (sent > cap * 64) {
        reject(new Error('the relay read far past its cap without answering'));
        req.destroy();
        return;
      }
      sent += chunk.length;
      if (req.write(chunk)) setImmediate(pump);
      else req.once('drain', pump);
    };
    req.write('{"items":[');
    pump();
  });
  assert.equal(answer.status, 413);
  assert.deepEqual(JSON.parse(answer.body), { error: 'request body too large' });
  assert.ok(answer.sent > cap);
  await stillServing(relay);
});

test('the same cap with a declared content-length, and the default 8 MiB cap on push', async () => {
  const relay = await startTestRelay();
  const over = await raw(relay, 'POST', '/v2/relay/items', ' '.repeat(8 * 1024 * 1024 + 1));
  assert.deepEqual([over.status, over.body], [413, { error: 'request body too large' }]);
});

test('a malformed request line or header over a raw socket → a JSON 4xx', async () => {
  const relay = await startTestRelay();
  const cases: Array<[string, string, number]> = [
    ['garbage request line', 'GARBAGE\r\n\r\n', 400],
    ['bad header line', 'GET /v2/relay/info HTTP/1.1\r\nHost: x\r\nthis is not a header\r\n\r\n', 400],
    ['conflicting lengths', 'POST /v2/relay/items HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello', 400],
    ['length and chunked', 'POST /v2/relay/items HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['headers too large', `GET /v2/relay/info HTTP/1.1\r\nHost: x\r\nx-big: ${'a'.repeat(64 * 1024)}\r\n\r\n`, 431],
    ['HTTP/1.1 without Host', 'GET /v2/relay/info HTTP/1.1\r\n\r\n', 400],
    ['CONNECT (the relay is no proxy)', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405],
    ['bad percent-encoding in the path', 'GET /v2/relay/%zz HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    [
      'chunk extension too large',
      `POST /v2/relay/items HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;${'a'.repeat(32 * 1024)}\r\nx\r\n0\r\n\r\n`,
      413,
    ],
  ];
  for (const [name, text, status] of cases) {
    const answer = parseHttp(await rawSocket(relay, text));
    assert.equal(answer.status, status, name);
    assert.equal(typeof (answer.body as { error?: unknown }).error, 'string', name);
  }
  await stillServing(relay);
});

/** The HTTP face over a real store, for tests that need its Fastify instance and server. */
async function bareRelayHttp(): Promise<{ app: FastifyInstance; port: number; close(): Promise<void> }> {
  const key = generateSigningKey();
  const store = await openSqliteRelayStore({ dir: tempDir(), relayPubkey: key.publicKey });
  const core = await createRelayCore({ store, relayKey: key, config: DEFAULT_CONFIG, version: 'test' });
  const port = await bindPort('127.0.0.1', 0, 'the test');
  const app = buildRelayHttp(core, DEFAULT_CONFIG, port);
  await app.ready();
  port.open();
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= app.close().then(() => store.close()));
  after(close);
  return { app, port: (app.server.address() as AddressInfo).port, close };
}

test('a request that times out in the HTTP layer is answered 408 JSON', async () => {
  const { app, port } = await bareRelayHttp();
  const accepted = new Promise<Socket>((resolve) => app.server.once('connection', resolve));
  const client = connect(port, '127.0.0.1');
  let answer = '';
  client.setEncoding('utf8').on('data', (chunk: string) => {
    answer += chunk;
  });
  const closed = new Promise((resolve) => client.on('close', resolve));
  // Node raises this when its request timeout fires (after minutes); raise it on the real socket now
  app.server.emit('clientError', Object.assign(new Error('request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), await accepted);
  await closed;
  assert.deepEqual(parseHttp(answer), { status: 408, body: { error: 'the request took too long to arrive' } });
});

test('a stop while a request is in flight answers it with connection: close and completes at once', { timeout: 20_000 }, async () => {
  const { app, port, close } = await bareRelayHttp();
  const body = JSON.stringify({ host: 'laptop', pubkey: generateSigningKey().publicKey });
  const arrived = new Promise((resolve) => app.server.once('request', resolve));
  const client = connect(port, '127.0.0.1');
  let answer = '';
  client.setEncoding('utf8').on('data', (chunk: string) => {
    answer += chunk;
  });
  const clientClosed = new Promise((resolve) => client.on('close', resolve));
  // headers and half the body now: the request is in flight; the rest only once the stop has begun
  client.write(`POST /v1/relay/challenge HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
  await arrived;
  const stopped = close();
  client.write(body.slice(10));
  await stopped; // without connection: close this waits for the keep-alive timeout (72 s)
  await clientClosed;
  assert.match(answer, /^HTTP\/1\.1 200 /);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  assert.equal(typeof (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { challenge?: unknown }).challenge, 'string');
});

test('hostile nesting 100,000 deep, in a wire or in the body, is a 4xx or a rejection and the relay keeps serving', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const b = await enrolledHost(relay, 'desk');
  const deepArray = '['.repeat(DEEP) + ']'.repeat(DEEP);
  const deepObject = `${'{"a":'.repeat(DEEP)}1${'}'.repeat(DEEP)}`;
  const env = sealedEnvelope(a, b, relay.clock.now);
  const inEnvelope = env.wire.replace('"meta":{', `"meta":{"deep":${deepObject},`);
  assert.notEqual(inEnvelope, env.wire);

  for (const [name, wire] of [
    ['array', deepArray],
    ['object', deepObject],
    ['inside an envelope', inEnvelope],
  ]) {
    for (const kind of ['envelope', 'receipt']) {
      const item = { kind, item_id: env.id, targets: [{ host_pubkey: b.key.publicKey, wire_b64: toBase64(Buffer.from(wire as string)) }] };
      const answer = await a.api.push([item]);
      assert.equal(answer.status, 200, `${name} ${kind}`);
      const status = (answer.body['results'] as Array<{ status: string }>)[0]?.status ?? '';
      assert.match(status, /^rejected:/, `${name} ${kind}: ${status}`);
    }
  }

  for (const body of [
    deepArray,
    deepObject,
    `{"items":${deepArray}}`,
    `{"items":[${deepObject}]}`,
    `{"items":[{"kind":"envelope","item_id":${deepArray},"targets":[]}]}`,
  ]) {
    for (const path of ['/v2/relay/items', '/v2/relay/ack', '/v2/relay/senders', '/v2/relay/enc-key', '/v1/relay/enc-key']) {
      const answer = await a.api.call('POST', path, body);
      assert.ok(answer.status < 500, `${path} ${body.slice(0, 30)}: ${answer.status}`);
      if (answer.status !== 200) assert.equal(typeof answer.body['error'], 'string');
    }
  }
  for (const path of ['/v1/relay/challenge', '/v1/relay/enrol', '/v2/relay/rotate']) {
    const shallow = '['.repeat(4000) + ']'.repeat(4000);
    const answer = await a.api.call('POST', path, `{"rotation":${shallow},"host":${shallow}}`, false);
    assert.ok(answer.status >= 400 && answer.status < 500, `${path}: ${answer.status}`);
  }
  await stillServing(relay);
  assert.equal((await b.api.pull(0)).body['head_seq'], 0, 'nothing hostile was stored');
});

test('a body that is not JSON → 400', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  for (const path of ['/v2/relay/items', '/v2/relay/ack', '/v2/relay/senders']) {
    const answer = await a.api.call('POST', path, '{"items": [');
    assert.deepEqual([answer.status, answer.body], [400, { error: 'request body is not valid JSON', code: 'BAD_JSON' }], path);
  }
  const unsigned = await a.api.call('POST', '/v1/relay/challenge', 'not json', false);
  assert.equal(unsigned.status, 400);
});

test('a store whose transaction queue is full answers 503 with retry-after; calls without a hop never queue on it', async () => {
  const relay = await startTestRelay();
  const a = await enrolledHost(relay, 'laptop');
  const store = relay.service.core.context.store;
  // hold the single writer, then fill the queue behind it: the real store, really full
  let release = (): void => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = (): void => {};
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const blocker = store.transaction(async () => {
    holding();
    await gate;
  });
  await held;
  // writes wait behind the held writer (reads have their own connection and would not)
  const queued = Array.from({ length: MAX_QUEUED_TRANSACTIONS }, () => store.transaction(async () => 0).catch(() => 0));
  try {
    const path = '/v2/relay/items?after=0';
    const busy = await fetch(`${relay.url}${path}`, { headers: { ...signRelayHop({ method: 'GET', path, rawBody: '' }, 'laptop', a.key, relay.clock.now) } });
    assert.equal(busy.status, 503);
    assert.equal(busy.headers.get('retry-after'), '1');
    assert.deepEqual(await busy.json(), { error: 'the relay is busy: try again shortly' });
    const response = await fetch(`${relay.url}/v2/relay/info`);
    assert.equal(response.status, 200, 'info without a hop needs no store transaction');
    assert.equal(((await response.json()) as { you?: unknown }).you, undefined);
    assert.deepEqual((await raw(relay, 'GET', '/v2/relay/items?after=0')).body, { error: 'bad relay hop' }, 'no hop: refused without queueing');
  } finally {
    release();
    await blocker;
    await Promise.all(queued);
  }
  assert.equal((await a.api.pull(0)).status, 200, 'served again once the queue drains');
});
