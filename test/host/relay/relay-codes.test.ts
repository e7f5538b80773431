// The host's relay client branches on refusal codes, never on statuses: behind a proxy that
// answers every refusal with an unrelated status (418) and strips `code` from its body, keeping only
// the x-mbx-refusal header, the host still follows an epoch change and still drops a refused session.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, test } from 'node:test';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { REFUSAL_HEADER } from '../../../src/protocol/relay-api/refusals.ts';
import { RelayApi } from '../../../src/host/relay-client/api.ts';
import { pullRelay } from '../../../src/host/transport/relay/relay-receive.ts';
import { ensureSession } from '../../../src/host/relay-client/session.ts';
import { relayWorld } from './relay-fixtures.ts';

/** A proxy to `relayUrl` that hides every refusal's status and body code; the code header passes. */
async function statusScramblingProxy(relayUrl: string): Promise<string> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && e[0] !== 'host'));
      const body = chunks.length === 0 ? undefined : Buffer.concat(chunks);
      fetch(new URL(req.url ?? '/', relayUrl), { method: req.method ?? 'GET', headers, ...(body === undefined ? {} : { body }) })
        .then(async (answer) => {
          const text = await answer.text();
          const code = answer.headers.get(REFUSAL_HEADER);
          if (answer.status === 200 || code === null) {
            res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
            return;
          }
          const { code: _dropped, ...rest } = JSON.parse(text) as Record<string, unknown>;
          res.writeHead(418, { 'content-type': 'application/json', [REFUSAL_HEADER]: code }).end(JSON.stringify(rest));
        })
        .catch(() => res.writeHead(502).end('{}'));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('proxy did not bind');
  return `http://127.0.0.1:${address.port}`;
}

test('an EPOCH refusal behind any status starts the position over; a BAD_HOP one drops the session', async () => {
  let proxyUrl = '';
  const world = await relayWorld({}, undefined, async (relayUrl) => (proxyUrl = await statusScramblingProxy(relayUrl)));
  const { node } = world.a;
  const opened = await ensureSession(node);
  assert.ok(opened.ok, opened.ok ? '' : opened.reason);

  node.store.relay.update({ epoch: 'an-epoch-the-relay-never-had' });
  const pulled = await pullRelay(node, opened.session);
  assert.equal(pulled.error, null);
  assert.equal(node.store.relay.get()?.epoch, world.relay.service.epoch, 'EPOCH (as 418) moved the host to the relay epoch');

  // the reset asks for a new session (an epoch change may be a new relay): open it again, a second
  // later, so that the enc-key ad it publishes again is newer than the stored one
  world.clock.advance(1000);
  const reopened = await ensureSession(node);
  assert.ok(reopened.ok, reopened.ok ? '' : reopened.reason);
  assert.notEqual(node.store.relay.get()?.session, null);
  const impostor = new RelayApi({ baseUrl: proxyUrl, hostName: node.config.host, key: generateSigningKey(), nowMs: world.clock.nowMs });
  const refused = await pullRelay(node, { ...reopened.session, api: impostor });
  assert.match(refused.error ?? '', /relay pull answered HTTP 418: bad relay hop/);
  assert.equal(node.store.relay.get()?.session, null, 'BAD_HOP (as 418) dropped the session');
});
