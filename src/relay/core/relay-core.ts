// The relay's rules in one facade over the store: no HTTP here (docs/design.md "Where the parts live").
import type { SigningKey } from '../../protocol/keys.ts';
import type { RelayHopRequest } from '../../protocol/relay-hop.ts';
import type { EnrolmentAuthority } from '../authority/enrolment-authority.ts';
import { INLINE_HOP_VERIFIER, type HopVerifier } from '../crypto/hop-verifier.ts';
import type { AccountTokenAuthority } from '../authority/account-token.ts';
import { authorityFromConfig } from '../authority/from-config.ts';
import { ACCOUNT_TOKEN_AUTHORITY } from '../authority/token-limits.ts';
import { MAX_LIVE_ENROLMENTS, type RelayConfig } from '../config.ts';
import type { Enrolment, ReadPriority, RelayStore } from '../store/relay-store.ts';
import { ChallengeTable, type Challenges } from './challenges.ts';
import { memoryPushRate } from './push-rate.ts';
import { storePushWriter, type PushWriter } from './push-writes.ts';
import { PendingWriters } from './pending-writers.ts';
import type { EncodedJson } from './encoded-json.ts';
import { HeldPulls } from './held-pulls.ts';
import { pullWakes, type PullWakes } from './pull-wakes.ts';
import { SILENT_OBSERVER, type CoreContext, type CoreObserver } from './context.ts';
import { enrol, issueChallenge } from './enrolment.ts';
import { lookupEncAdByKey, lookupEncAdByName, publishEncAdV1, publishEncAdV2 } from './enc-ads.ts';
import { hopCandidates, hopSigner, type HopHeaders } from './hop-auth.ts';
import { addDenyEntries, HostedRelay, sessionRefusal } from './hosted.ts';
import { info } from './info.ts';
import type { HostRotation } from '../../protocol/records/rotation.ts';
import type { DenyRequestEntry } from '../../protocol/relay-api/admin-deny.ts';
import type { EncAdV1Request, EncAdV2Request } from '../../protocol/relay-api/enc-key.ts';
import type { ChallengeRequest, EnrolRequest } from '../../protocol/relay-api/enrolment.ts';
import type { PullRequest } from '../../protocol/relay-api/pull.ts';
import type { PushRequest } from '../../protocol/relay-api/push.ts';
import { Refusal, type Parsed } from '../../protocol/relay-api/refusals.ts';
import type { SenderListRequest } from '../../protocol/relay-api/senders.ts';
import { ack, pull } from './pull-ack.ts';
import { push } from './push.ts';
import { rotate } from './rotation.ts';
import { publishSenderList } from './sender-lists.ts';
import { ackV1, pullV1, pushV1 } from './v1-messages.ts';

export interface RelayCoreOptions {
  store: RelayStore;
  relayKey: SigningKey;
  config: RelayConfig;
  version: string;
  authority?: EnrolmentAuthority;
  nowMs?: () => number;
  random?: (n: number) => Uint8Array;
  /** defaults to MAX_LIVE_ENROLMENTS */
  maxLiveEnrolments?: number;
  /** where hop signatures are checked; defaults to the event loop (the service passes a worker pool) */
  hopVerifier?: HopVerifier;
  /** counts write requests (POST) while their callers are identified; the service shares it with the store */
  pendingWriters?: PendingWriters;
  /** where enrolment challenges live (default: in memory; a relay group's workers keep them in the store) */
  challenges?: Challenges;
  /** who writes pushed items (default: this process, counting the push rate in memory) */
  pushWriter?: PushWriter;
  /** this process's held pulls (default: a table of MAX_HELD_PULLS) */
  heldPulls?: HeldPulls<EncodedJson>;
  /** who hears of committed items besides this process's held pulls (default: nobody; a group's workers and PostgreSQL relays pass theirs) */
  pullWakes?: (held: HeldPulls<EncodedJson>) => PullWakes;
  /** told of the core's outcomes (the relay's metrics); default: nobody */
  observer?: CoreObserver;
}

export type RelayCore = Awaited<ReturnType<typeof createRelayCore>>;

/** A hosted relay's authority, told apart by its name: a relay without account tokens does not load that module (and its JWT library). */
function isAccountTokenAuthority(authority: EnrolmentAuthority): authority is AccountTokenAuthority {
  return authority.name === ACCOUNT_TOKEN_AUTHORITY;
}

export async function createRelayCore(options: RelayCoreOptions) {
  const meta = await options.store.read((tx) => tx.meta.get());
  const nowMs = options.nowMs ?? Date.now;
  const authority = options.authority ?? (await authorityFromConfig(options.config, nowMs));
  const pendingWriters = options.pendingWriters ?? new PendingWriters();
  const heldPulls = options.heldPulls ?? new HeldPulls<EncodedJson>();
  const ctx: CoreContext = {
    store: options.store,
    relayKey: options.relayKey,
    config: options.config,
    authority,
    hosted: isAccountTokenAuthority(authority) ? new HostedRelay(authority) : null,
    nowMs,
    version: options.version,
    epoch: meta.epoch,
    challenges: options.challenges ?? new ChallengeTable(options.random),
    pushWriter:
      options.pushWriter ??
      storePushWriter({ store: options.store, config: options.config, nowMs, pushRate: memoryPushRate(options.config.pushes_per_minute) }),
    maxLiveEnrolments: options.maxLiveEnrolments ?? MAX_LIVE_ENROLMENTS,
    hopVerifier: options.hopVerifier ?? INLINE_HOP_VERIFIER,
    heldPulls,
    pullWakes: options.pullWakes?.(heldPulls) ?? pullWakes((keys) => heldPulls.wake(keys)),
    observer: options.observer ?? SILENT_OBSERVER,
  };
  return {
    context: ctx,
    /** the live enrolment that signed the request, or null */
    caller: async (headers: HopHeaders, request: RelayHopRequest, priority: ReadPriority = 'ordinary'): Promise<Enrolment | null> => {
      const identify = async (): Promise<Enrolment | null> => {
        // one statement (by key or by name): a lookup, one round trip on PostgreSQL
        const candidates = await ctx.store.lookup((tx) => hopCandidates(tx, headers, ctx.nowMs()), priority);
        return hopSigner(ctx.hopVerifier, candidates, headers, request);
      };
      // every hop-signed POST writes; a GET only reads
      return request.method === 'POST' ? pendingWriters.track(identify) : identify();
    },
    /** a hosted relay's refusal of a signed caller without a valid session (docs/hosted-relay.md), or null */
    sessionRefusal: async (caller: Enrolment, authorization: string | undefined): Promise<Refusal | null> =>
      ctx.hosted === null ? null : sessionRefusal(ctx, ctx.hosted, caller, authorization),
    /** POST /v2/relay/admin/deny; only a hosted relay has the route */
    deny: async (authorization: string | undefined, request: Parsed<DenyRequestEntry[]>) => {
      if (ctx.hosted === null) throw new Refusal('NOT_FOUND');
      return addDenyEntries(ctx, ctx.hosted, authorization, request);
    },
    info: (caller: Enrolment | null) => info(ctx, caller),
    challenge: (request: ChallengeRequest) => issueChallenge(ctx, request),
    enrol: (request: EnrolRequest) => enrol(ctx, request),
    push: (caller: Enrolment, request: PushRequest) => push(ctx, caller, request),
    pull: (caller: Enrolment, request: PullRequest, gone?: AbortSignal) => pull(ctx, caller, request, gone),
    ack: (caller: Enrolment, request: Parsed<{ through: number }>) => ack(ctx, caller, request),
    publishSenderList: (caller: Enrolment, request: SenderListRequest) => publishSenderList(ctx, caller, request),
    rotate: (rotation: HostRotation) => rotate(ctx, rotation),
    publishEncAdV2: (caller: Enrolment, request: EncAdV2Request) => publishEncAdV2(ctx, caller, request),
    publishEncAdV1: (caller: Enrolment, request: EncAdV1Request) => publishEncAdV1(ctx, caller, request),
    lookupEncAdByKey: (pubkey: string) => lookupEncAdByKey(ctx, pubkey),
    lookupEncAdByName: (caller: Enrolment, host: string) => lookupEncAdByName(ctx, caller, host),
    pushV1: (caller: Enrolment, request: { envelopes: unknown[] }) => pushV1(ctx, caller, request),
    pullV1: (caller: Enrolment, request: { after: number }) => pullV1(ctx, caller, request),
    ackV1: (caller: Enrolment, request: { cursor: number }) => ackV1(ctx, caller, request),
  };
}
