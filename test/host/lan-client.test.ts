// The LAN client's own limits: a peer's answer is read up to a cap; addresses are normalized.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { normalizeAddr } from '../../src/host/core/peer-addr.ts';
import { fetchPeerEncKey, lanCall } from '../../src/host/transport/lan/client.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { LAN_MAX_RESPONSE_BYTES } from '../../src/host/transport/lan/limits.ts';
import { pairedHosts } from './fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

test('an answer over the response cap is refused', async () => {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    const pump = (): void => {
      while (sent <= LAN_MAX_RESPONSE_BYTES) {
        sent += chunk.length;
        if (!res.write(chunk)) {
          res.once('drain', pump);
          return;
        }
      }
      res.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await assert.rejects(lanCall(url, 'GET', '/v1/status', undefined, null), /larger than/);
});

test('addresses: host:port and URLs', () => {
  assert.equal(normalizeAddr('10.0.0.2:7373'), 'http://10.0.0.2:7373');
  assert.equal(normalizeAddr('http://box.local:7373/'), 'http://box.local:7373');
  assert.throws(() => normalizeAddr('ftp://x'), /use http/);
});

test('a missing enc key is fetched over a signed call and must be signed by the pinned key', async () => {
  const clock = new TestClock();
  const { a, b } = await pairedHosts(clock);
  const peer = a.store.peers.get('beta') ?? assert.fail();
  a.store.peers.pin({ ...peer, enc_pub: null, enc_sig: null }, clock.now);
  assert.equal(await fetchPeerEncKey(a, a.store.peers.get('beta') ?? assert.fail()), b.keys.enc.publicKey);
  assert.equal(a.store.peers.get('beta')?.enc_pub, b.keys.enc.publicKey);
  // Pinned to another key, the same answer is refused.
  a.store.peers.pin({ ...peer, host_pubkey: generateSigningKey().publicKey, enc_pub: null, enc_sig: null }, clock.now);
  await assert.rejects(fetchPeerEncKey(a, a.store.peers.get('beta') ?? assert.fail()), /HTTP 401|not signed by its pinned key/);
});
