// What a host publishes about itself: its enc-key advertisement and its sender allowlist.
import type { SQLTagStore } from 'node:sqlite';
import type { EncAd, SenderList } from '../relay-store.ts';
import { int, intOrNull, text, textOrNull } from './columns.ts';

export function getEncAd(sql: SQLTagStore, hostPubkey: string): EncAd | null {
  const row = sql.get`SELECT * FROM enc_ads WHERE host_pubkey = ${hostPubkey}`;
  if (row === undefined) return null;
  const version = int(row, 'version');
  return {
    hostPubkey: text(row, 'host_pubkey'),
    encPub: text(row, 'enc_pub'),
    version: version === 1 ? 1 : 2,
    record: textOrNull(row, 'record'),
    sig: text(row, 'sig'),
    iat: int(row, 'iat'),
    exp: intOrNull(row, 'exp'),
    at: int(row, 'at'),
  };
}

export function putEncAd(sql: SQLTagStore, ad: EncAd): void {
  sql.run`INSERT INTO enc_ads (host_pubkey, enc_pub, version, record, sig, iat, exp, at)
          VALUES (${ad.hostPubkey}, ${ad.encPub}, ${ad.version}, ${ad.record}, ${ad.sig}, ${ad.iat}, ${ad.exp}, ${ad.at})
          ON CONFLICT (host_pubkey) DO UPDATE SET enc_pub = excluded.enc_pub, version = excluded.version,
            record = excluded.record, sig = excluded.sig, iat = excluded.iat, exp = excluded.exp, at = excluded.at`;
}

function parseSenders(json: string): string[] {
  const value: unknown = JSON.parse(json);
  if (!Array.isArray(value) || !value.every((key) => typeof key === 'string')) {
    throw new Error('relay store damaged: sender_lists.senders is not a JSON array of keys');
  }
  return value;
}

export function getSenderList(sql: SQLTagStore, targetPubkey: string): SenderList | null {
  const row = sql.get`SELECT * FROM sender_lists WHERE target_pubkey = ${targetPubkey}`;
  if (row === undefined) return null;
  return {
    targetPubkey: text(row, 'target_pubkey'),
    senders: parseSenders(text(row, 'senders')),
    iat: int(row, 'iat'),
    record: text(row, 'record'),
    sig: text(row, 'sig'),
  };
}

export function putSenderList(sql: SQLTagStore, list: SenderList): void {
  const senders = JSON.stringify(list.senders);
  sql.run`INSERT INTO sender_lists (target_pubkey, senders, iat, record, sig)
          VALUES (${list.targetPubkey}, ${senders}, ${list.iat}, ${list.record}, ${list.sig})
          ON CONFLICT (target_pubkey) DO UPDATE SET senders = excluded.senders, iat = excluded.iat,
            record = excluded.record, sig = excluded.sig`;
}

/** Rotation: the old key becomes the new one in every allowlist that names it, without duplicates. */
export function replaceSenderInLists(sql: SQLTagStore, oldPubkey: string, newPubkey: string): void {
  const rows = sql.all`SELECT target_pubkey, senders FROM sender_lists
                       WHERE EXISTS (SELECT 1 FROM json_each(sender_lists.senders) WHERE value = ${oldPubkey})`;
  for (const row of rows) {
    const swapped = parseSenders(text(row, 'senders')).map((key) => (key === oldPubkey ? newPubkey : key));
    const senders = JSON.stringify([...new Set(swapped)]);
    sql.run`UPDATE sender_lists SET senders = ${senders} WHERE target_pubkey = ${text(row, 'target_pubkey')}`;
  }
}

/** Rotation: the old key's allowlist becomes the new key's, unless the new key published its own. */
export function moveSenderList(sql: SQLTagStore, oldPubkey: string, newPubkey: string): void {
  sql.run`UPDATE OR IGNORE sender_lists SET target_pubkey = ${newPubkey} WHERE target_pubkey = ${oldPubkey}`;
}
