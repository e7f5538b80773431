// What the RelayStore behaviour suite needs of a backend, and the records its tests build. A backend
// runs the suite with one line: describeRelayStore('name', openUnderTest) (see index.ts).
import { test } from 'node:test';
import { sha256Hex } from '../../../../src/protocol/hash.ts';
import type { Enrolment, NewItem, RelayStore, SenderList } from '../../../../src/relay/store/relay-store.ts';

export interface StoreUnderTest {
  /** the open store; replaced by reopen() */
  store: RelayStore;
  /** the relay key the store was created for */
  relayPubkey: string;
  /** closes `store` and opens the same store again (what a relay restart does); returns it */
  reopen(): Promise<RelayStore>;
  /** closes whatever is open and throws the store away */
  close(): Promise<void>;
}

/** Opens a new, empty store. */
export type OpenStoreUnderTest = () => Promise<StoreUnderTest>;

/** A StoreUnderTest over `openStore`, which opens the same store each time it is called. */
export async function storeUnderTest(openStore: () => Promise<RelayStore>, relayPubkey: string): Promise<StoreUnderTest> {
  const under: StoreUnderTest = {
    store: await openStore(),
    relayPubkey,
    async reopen() {
      await under.store.close();
      under.store = await openStore();
      return under.store;
    },
    close: () => under.store.close(),
  };
  return under;
}

/** A test on a fresh store that is closed and thrown away however the test ends. */
export function storeTest(open: OpenStoreUnderTest, name: string, fn: (under: StoreUnderTest) => Promise<void>): void {
  test(name, async () => {
    const under = await open();
    try {
      await fn(under);
    } finally {
      await under.close();
    }
  });
}

export function item(fields: Partial<NewItem> & { targetPubkey: string; itemId: string }, size = 10): NewItem {
  const wire = fields.wire ?? new TextEncoder().encode(`${fields.itemId}:`.padEnd(size, 'x'));
  return {
    kind: 'envelope',
    senderPubkey: 'sender',
    acceptedAt: 1_000,
    expiresAt: 2_000,
    account: null,
    wireHash: sha256Hex(wire),
    ...fields,
    wire,
  };
}

export function enrolment(hostPubkey: string, fields: Partial<Enrolment> = {}): Enrolment {
  return { hostPubkey, hostName: 'macbook', ownerFp: 'fp', account: null, org: null, authorizedBy: 'host-key', enrolledAt: 1, revokedAt: null, ...fields };
}

export function senderList(targetPubkey: string, senders: string[]): SenderList {
  return { targetPubkey, senders, iat: 1, record: `{"host_pubkey":"${targetPubkey}"}`, sig: 'sig' };
}

/** Which of `itemIds` (sent by 'sender' to `target`) still have a dedup row. */
export async function dedupLeft(store: RelayStore, target: string, itemIds: string[]): Promise<string[]> {
  return store.read(async (reader) => {
    const left: string[] = [];
    for (const itemId of itemIds) if ((await reader.items.dedup('sender', itemId, target)) !== null) left.push(itemId);
    return left;
  });
}
