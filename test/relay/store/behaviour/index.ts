// The RelayStore behaviour suite: every contract a backend must keep, run against a backend by one
// line in a test file: describeRelayStore('sqlite', openUnderTest) (see ../sqlite-behaviour.test.ts).
import { describe } from 'node:test';
import { describeDedupSweep } from './dedup-sweep.ts';
import type { OpenStoreUnderTest } from './harness.ts';
import { describeItems } from './items.ts';
import { describeMetaAndAccounts } from './meta-accounts.ts';
import { describePrimitives } from './primitives.ts';
import { describeRecords } from './records.ts';
import { describeRotation } from './rotation.ts';
import { describeSharedState } from './shared-state.ts';
import { describeTransactions } from './transactions.ts';
import { describeUsage } from './usage.ts';

export { storeUnderTest, type OpenStoreUnderTest, type StoreUnderTest } from './harness.ts';

export function describeRelayStore(name: string, open: OpenStoreUnderTest): void {
  describe(`RelayStore behaviour: ${name}`, () => {
    describe('transactions and reads', () => describeTransactions(open));
    describe('items, seqs, pulls and acks', () => describeItems(open));
    describe('primitives of the rules', () => describePrimitives(open));
    describe('the dedup sweep', () => describeDedupSweep(open));
    describe('usage counters', () => describeUsage(open));
    describe('rotation', () => describeRotation(open));
    describe('enrolments and host records', () => describeRecords(open));
    describe('meta and accounts', () => describeMetaAndAccounts(open));
    describe('state shared by relay processes', () => describeSharedState(open));
  });
}
