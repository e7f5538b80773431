// Write requests count as pending while their callers are identified, so that an open commit group
// lingers for them; reads (pulls, lookups) never hold a group open.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { relayHopString } from '../../src/protocol/relay-hop.ts';
import { DEFAULT_CONFIG } from '../../src/relay/config.ts';
import { verifyHopInline, type HopCheck, type HopVerifier } from '../../src/relay/crypto/hop-verifier.ts';
import { PendingWriters } from '../../src/relay/core/pending-writers.ts';
import { createRelayCore } from '../../src/relay/core/relay-core.ts';
import { openSqliteRelayStore } from '../../src/relay/store/sqlite/index.ts';
import { tempDir } from '../helpers/processes.ts';

const NOW = 1_800_000_000_000;

/** A verifier whose answers wait until the test releases them. */
function heldVerifier(): HopVerifier & { release(): void } {
  const held: Array<() => void> = [];
  return {
    verify: (check: HopCheck) =>
      new Promise<boolean>((resolve) => {
        held.push(() => resolve(verifyHopInline(check)));
      }),
    pending: () => held.length,
    close: async () => {},
    release: () => {
      for (const answer of held.splice(0)) answer();
    },
  };
}

test('a POST caller is a pending writer until identified; a GET caller never is', async () => {
  const relayKey = generateSigningKey();
  const host = generateSigningKey();
  const store = await openSqliteRelayStore({ dir: tempDir(), relayPubkey: relayKey.publicKey });
  after(() => store.close());
  await store.transaction((tx) =>
    tx.enrolments.put({
      hostPubkey: host.publicKey,
      hostName: 'laptop',
      ownerFp: 'owner',
      account: null,
      org: null,
      authorizedBy: 'host-key',
      enrolledAt: NOW,
      revokedAt: null,
    }),
  );
  const verifier = heldVerifier();
  const pendingWriters = new PendingWriters();
  const core = await createRelayCore({ store, relayKey, config: DEFAULT_CONFIG, version: 'test', nowMs: () => NOW, hopVerifier: verifier, pendingWriters });
  const identify = async (method: 'GET' | 'POST', path: string, rawBody: string): Promise<void> => {
    const ts = String(NOW);
    const headers = { host: 'laptop', key: host.publicKey, ts, sig: host.sign(relayHopString(method, path, ts, rawBody)) };
    const caller = core.caller(headers, { method, path, rawBody });
    // the lookup runs first (a read transaction), then the check goes out
    for (let turn = 0; turn < 1_000 && verifier.pending() === 0; turn += 1)
      await new Promise<void>((resolve) => {
        setImmediate(resolve);
      });
    assert.equal(verifier.pending(), 1, `${method}: the hop check went out`);
    assert.equal(pendingWriters.any(), method === 'POST', `${method} while its hop check is out`);
    verifier.release();
    assert.equal((await caller)?.hostPubkey, host.publicKey);
    assert.equal(pendingWriters.any(), false, `${method} once identified`);
  };
  await identify('GET', '/v2/relay/items?after=0', '');
  await identify('POST', '/v2/relay/items', '{"items":[]}');
});
