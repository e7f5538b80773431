// The v1 mail endpoints kept for 0.5.x hosts (protocol.md §3.10): POST /v1/relay/messages
// {envelopes:[…]} → {stored, error?}; GET /v1/relay/messages?after=N → {items, cursor};
// POST /v1/relay/ack {cursor} → {ok:true}.
import { isPlainObject } from '../validate.ts';
import { parseBatch } from './push.ts';
import { parseSeqCursor } from './pull.ts';
import { parsed, Refusal, refused, type Parsed } from './refusals.ts';

export function parseV1PushRequest(body: unknown, maxBatch: number): Parsed<{ envelopes: unknown[] }> {
  const envelopes = parseBatch(body, 'envelopes', 'envelopes', maxBatch);
  return envelopes.ok ? parsed({ envelopes: envelopes.value }) : envelopes;
}

export function parseV1PullQuery(query: { after?: string | undefined }): Parsed<{ after: number }> {
  const after = parseSeqCursor(query.after);
  return after.ok ? parsed({ after: after.value }) : after;
}

/** `{cursor}`: any finite number; the core clamps it to 0…head. */
export function parseV1AckRequest(body: unknown): Parsed<{ cursor: number }> {
  const cursor = isPlainObject(body) ? body['cursor'] : undefined;
  return typeof cursor === 'number' && Number.isFinite(cursor) ? parsed({ cursor }) : refused(new Refusal('BAD_V1_ACK'));
}
