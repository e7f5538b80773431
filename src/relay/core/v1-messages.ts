// The v1 mail endpoints kept for 0.5.x hosts (design §11, protocol.md §3.10), on the same durable
// store and through the same push path as v2: envelopes are routed by the host part of their `to`
// addresses under the v1 name rules, and a name that is unknown or ambiguous stores nothing.
import { toBase64 } from '../../protocol/base64.ts';
import { parseAddress } from '../../protocol/records/envelope.ts';
import { isPlainObject, parseJsonWire } from '../../protocol/validate.ts';
import type { Enrolment, RelayReader } from '../store/relay-store.ts';
import type { CoreContext } from './context.ts';
import { push } from './push.ts';
import { resolveV1Name } from './v1-names.ts';

type V1Route = { item: unknown } | { error: string };

async function routeEnvelope(tx: RelayReader, caller: Enrolment, envelope: unknown): Promise<V1Route> {
  const fields = isPlainObject(envelope) ? envelope : null;
  const id = fields?.['id'];
  const to = fields?.['to'];
  if (typeof id !== 'string' || !Array.isArray(to) || to.length === 0) return { error: 'bad envelope' };
  const hosts = new Set<string>();
  for (const address of to) {
    const parsed = parseAddress(address);
    if (parsed?.kind !== 'agent' || parsed.host === undefined) return { error: 'recipient has no host: relay mail needs name@host' };
    hosts.add(parsed.host.toLowerCase());
  }
  const keys = new Set<string>();
  for (const host of hosts) {
    const resolved = await resolveV1Name(tx, caller, host);
    if (resolved.found === null) return { error: resolved.why === 'ambiguous' ? 'recipient host ambiguous' : 'recipient host not enrolled' };
    keys.add(resolved.found.hostPubkey);
  }
  const wire = toBase64(Buffer.from(JSON.stringify(envelope), 'utf8'));
  return { item: { kind: 'envelope', item_id: id, targets: [...keys].map((host_pubkey) => ({ host_pubkey, wire_b64: wire })) } };
}

export async function pushV1(ctx: CoreContext, caller: Enrolment, { envelopes }: { envelopes: unknown[] }): Promise<{ stored: number; error?: string }> {
  const routes = await ctx.store.read(async (tx) => {
    const out: V1Route[] = [];
    for (const envelope of envelopes) out.push(await routeEnvelope(tx, caller, envelope));
    return out;
  });
  const routable = routes.flatMap((r) => ('item' in r ? [r.item] : []));
  const { results } = await push(ctx, caller, { items: routable });
  let next = 0;
  const errors = routes.map((r) => ('error' in r ? r.error : (results[next++]?.status ?? ''))).filter((s) => s !== 'accepted' && s !== 'duplicate');
  const stored = results.filter((r) => r.status === 'accepted' || r.status === 'duplicate').length;
  return errors.length === 0 ? { stored } : { stored, error: errors[0] as string };
}

export async function pullV1(ctx: CoreContext, caller: Enrolment, { after }: { after: number }) {
  return ctx.store.read(async (tx) => {
    const page = await tx.items.pull(caller.hostPubkey, after, ctx.config.limits.max_pull, ctx.config.limits.max_pull_bytes);
    const names = new Map<string, string>();
    const items = [];
    // v1 clients know envelopes only; other kinds are passed over and acked with the cursor
    for (const item of page.items.filter((i) => i.kind === 'envelope')) {
      if (!names.has(item.senderPubkey)) names.set(item.senderPubkey, (await tx.enrolments.get(item.senderPubkey))?.hostName ?? '');
      items.push({ seq: item.seq, envelope: parseJsonWire(item.wire) ?? null, from: names.get(item.senderPubkey) });
    }
    return { items, cursor: page.items.at(-1)?.seq ?? after };
  });
}

export async function ackV1(ctx: CoreContext, caller: Enrolment, { cursor }: { cursor: number }): Promise<{ ok: true }> {
  await ctx.store.transaction(async (tx) => {
    const through = Math.min(Math.max(0, Math.trunc(cursor)), await tx.items.headSeq(caller.hostPubkey));
    await tx.items.ack(caller.hostPubkey, through);
  });
  return { ok: true };
}
