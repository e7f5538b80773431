// The relay's rules without HTTP: a RelayCore over a real SQLite store in a temporary directory, on
// a TestClock. For tests whose subject is a core rule (expiry, dedup, quotas, allow-lists), not the
// HTTP face: no service, listener, worker pool or timers start, so a test costs a store, not a relay.
// Hosts enrol through the core's own challenge and enrolment rules; their `api` pushes and pulls
// straight into the core, so the push helpers of relay-fixture.ts work on them unchanged.
import { after } from 'node:test';
import { canonicalJson } from '../../src/protocol/canonical.ts';
import { generateSigningKey } from '../../src/protocol/keys.ts';
import type { RelayAnswer } from '../../src/host/relay-client/api.ts';
import type { CoreContext } from '../../src/relay/core/context.ts';
import { EncodedJson } from '../../src/relay/core/encoded-json.ts';
import { createRelayCore, type RelayCore, type RelayCoreOptions } from '../../src/relay/core/relay-core.ts';
import { memoryPushRate, storePushRate } from '../../src/relay/core/push-rate.ts';
import { storePushWriter } from '../../src/relay/core/push-writes.ts';
import { parseAckRequest } from '../../src/protocol/relay-api/ack.ts';
import { parseEnrolRequest } from '../../src/protocol/relay-api/enrolment.ts';
import { parsePullQuery } from '../../src/protocol/relay-api/pull.ts';
import { parsePushRequest } from '../../src/protocol/relay-api/push.ts';
import { takeParsed } from '../../src/protocol/relay-api/refusals.ts';
import type { Enrolment, RelayStore } from '../../src/relay/store/relay-store.ts';
import { storeChallenges } from '../../src/relay/core/challenges.ts';
import { openRelayStore } from '../../src/relay/store/open-relay-store.ts';
import { TestClock } from './clock.ts';
import { tempDir } from './processes.ts';
import { hostKeys, testConfig, type HostKeys, type TestRelayOptions } from './relay-fixture.ts';

export interface TestCore {
  core: RelayCore;
  /** what the core's rules (sweep, push…) take */
  context: CoreContext;
  clock: TestClock;
  relayPubkey: string;
  /** write groups the store has committed so far (reads commit none) */
  commits(): number;
  /** write transactions those groups held */
  transactions(): number;
}

export interface TestCoreOptions
  extends Pick<TestRelayOptions, 'clock' | 'limits' | 'config' | 'authority' | 'maxLiveEnrolments'>,
    Pick<RelayCoreOptions, 'heldPulls'> {
  /** count the push rate in the store, as relay processes sharing a PostgreSQL store do (default: in memory) */
  pushRateInStore?: boolean;
}

/** How a test opens the core's store instead of a fresh SQLite one (the options it must pass on). */
export type OpenTestStore = (options: { relayPubkey: string; nowMs: () => number; onGroupCommit: (size: number) => void }) => Promise<RelayStore>;

/**
 * A core on a fresh store, closed after the test. `openStore` puts it on another store (PostgreSQL):
 * the core then keeps its push counts and challenges in the store, as every relay process on a
 * shared store does (relay-service.ts).
 */
export async function startTestCore(options: TestCoreOptions & { openStore?: OpenTestStore } = {}): Promise<TestCore> {
  const { clock = new TestClock(), limits, config: settings, pushRateInStore = false, openStore, ...extras } = options;
  const config = testConfig(settings, limits);
  const relayKey = generateSigningKey();
  let commits = 0;
  let transactions = 0;
  const onGroupCommit = (size: number): void => {
    commits += 1;
    transactions += size;
  };
  const storeOptions = { relayPubkey: relayKey.publicKey, nowMs: clock.nowMs, onGroupCommit };
  const store = openStore === undefined ? await openRelayStore({ location: tempDir('agentmbx-core-'), ...storeOptions }) : await openStore(storeOptions);
  after(() => store.close());
  const inStore = pushRateInStore || openStore !== undefined;
  const pushRate = inStore ? storePushRate(config.pushes_per_minute) : memoryPushRate(config.pushes_per_minute);
  const pushWriter = storePushWriter({ store, config, nowMs: clock.nowMs, pushRate });
  const shared = openStore === undefined ? {} : { challenges: storeChallenges(store) };
  const core = await createRelayCore({ store, relayKey, config, version: 'test', nowMs: clock.nowMs, pushWriter, ...shared, ...extras });
  return { core, context: core.context, clock, relayPubkey: relayKey.publicKey, commits: () => commits, transactions: () => transactions };
}

/** A host enrolled at a core: push and pull answer as RelayApi's do (a refusal throws the core's RelayError). */
export interface CoreHost extends HostKeys {
  enrolment: Enrolment;
  api: {
    push(items: unknown[]): Promise<RelayAnswer>;
    pull(after: number, limit?: number, wait?: number): Promise<RelayAnswer>;
    ack(through: number, epoch: string): Promise<RelayAnswer>;
  };
}

function answer(body: unknown): RelayAnswer {
  const parsed = body instanceof EncodedJson ? (JSON.parse(body.bytes.toString('utf8')) as Record<string, unknown>) : (body as Record<string, unknown>);
  return { status: 200, body: parsed, refusalCode: null, date: null, retryAfter: null };
}

/** Enrols `name` with a new key through the core's challenge (protocol.md §3.2). */
export async function enrolledAtCore(relay: TestCore, name: string): Promise<CoreHost> {
  const host = hostKeys(name);
  const { key } = host;
  const { challenge } = await relay.core.challenge({ host: name, pubkey: key.publicKey });
  const sig = key.sign(canonicalJson({ v: 1, challenge, host: name, pubkey: key.publicKey, owner_fp: '' }));
  await relay.core.enrol(takeParsed(parseEnrolRequest({ host: name, pubkey: key.publicKey, owner_fp: '', sig })));
  const enrolment = await relay.context.store.read((tx) => tx.enrolments.get(key.publicKey));
  if (enrolment === null) throw new Error(`enrol ${name}: no enrolment stored`);
  return {
    ...host,
    enrolment,
    api: {
      push: async (items) => answer(await relay.core.push(enrolment, takeParsed(parsePushRequest({ items }, relay.context.config.limits.max_batch)))),
      pull: async (after, limit, wait) =>
        answer(
          await relay.core.pull(
            enrolment,
            takeParsed(
              parsePullQuery(
                { after: String(after), ...(limit === undefined ? {} : { limit: String(limit) }), ...(wait === undefined ? {} : { wait: String(wait) }) },
                { epoch: relay.context.epoch, maxPull: relay.context.config.limits.max_pull, maxWaitS: relay.context.config.limits.max_wait_s },
              ),
            ),
          ),
        ),
      ack: async (through, epoch) => answer(await relay.core.ack(enrolment, parseAckRequest({ through, epoch }, relay.context.epoch))),
    },
  };
}
