// GET /v2/relay/info (protocol.md §3.1): who the relay is, its epoch and limits, and for a caller
// whose hop is valid and enrolled, `you`.
import { isPublicKey } from '../keys.ts';
import { isPlainObject } from '../validate.ts';
import { readReply, type Reply, type WireAnswer } from './answer.ts';

export interface InfoYou {
  host: string;
  pubkey: string;
  head_seq: number;
  acked_through: number;
  /** absent on a relay that predates signed enc-key ads; null when it holds none */
  enc_ad?: { enc_pub: string; exp: string | null } | null;
}

export interface InfoAnswer {
  v: 2;
  relay_pubkey: string;
  epoch: string;
  version: string;
  limits: Record<string, number>;
  you?: InfoYou;
}

/** The limits a host reads, each a number or absent. */
export interface InfoLimits {
  retention_days?: number;
  max_batch?: number;
  max_pull?: number;
  max_item_bytes?: number;
}

function numbersOf(value: unknown): Record<string, number> {
  if (!isPlainObject(value)) return {};
  return Object.fromEntries(Object.entries(value).filter((e): e is [string, number] => typeof e[1] === 'number'));
}

function youOf(value: unknown): InfoYou | undefined {
  if (!isPlainObject(value) || typeof value['pubkey'] !== 'string') return undefined;
  const ad = value['enc_ad'];
  const you: InfoYou = {
    host: typeof value['host'] === 'string' ? value['host'] : '',
    pubkey: value['pubkey'],
    head_seq: typeof value['head_seq'] === 'number' ? value['head_seq'] : 0,
    acked_through: typeof value['acked_through'] === 'number' ? value['acked_through'] : 0,
  };
  if (!('enc_ad' in value)) return you;
  const encPub = isPlainObject(ad) && typeof ad['enc_pub'] === 'string' ? ad['enc_pub'] : null;
  const exp = isPlainObject(ad) && typeof ad['exp'] === 'string' ? ad['exp'] : null;
  return { ...you, enc_ad: encPub === null ? null : { enc_pub: encPub, exp } };
}

/** An info answer: a v2 relay names its key and a non-empty epoch; anything else is no v2 relay. */
export function readInfo(body: Record<string, unknown>): InfoAnswer | null {
  const { relay_pubkey: relayPubkey, epoch } = body;
  if (!isPublicKey(relayPubkey) || typeof epoch !== 'string' || epoch === '') return null;
  const you = youOf(body['you']);
  return {
    v: 2,
    relay_pubkey: relayPubkey,
    epoch,
    version: typeof body['version'] === 'string' ? body['version'] : '',
    limits: numbersOf(body['limits']),
    ...(you === undefined ? {} : { you }),
  };
}

export function readInfoAnswer(answer: WireAnswer): Reply<InfoAnswer> {
  return readReply(answer, readInfo);
}
