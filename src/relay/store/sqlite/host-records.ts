// What a host publishes about itself: its enc-key advertisement and its sender allowlist.
import type { SQLTagStore } from 'node:sqlite';
import type { EncAd, HostRecordReader, HostRecordTransactor, SenderList } from '../relay-store.ts';
import { int, intOrNull, text, textOrNull, type Row } from '../sql/columns.ts';
import type { UseSql } from './use-sql.ts';

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
    v1Sig: textOrNull(row, 'v1_sig'),
  };
}

export function putEncAd(sql: SQLTagStore, ad: EncAd): void {
  sql.run`INSERT INTO enc_ads (host_pubkey, enc_pub, version, record, sig, iat, exp, at, v1_sig)
          VALUES (${ad.hostPubkey}, ${ad.encPub}, ${ad.version}, ${ad.record}, ${ad.sig}, ${ad.iat}, ${ad.exp}, ${ad.at}, ${ad.v1Sig})
          ON CONFLICT (host_pubkey) DO UPDATE SET enc_pub = excluded.enc_pub, version = excluded.version,
            record = excluded.record, sig = excluded.sig, iat = excluded.iat, exp = excluded.exp, at = excluded.at, v1_sig = excluded.v1_sig`;
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
  return row === undefined ? null : senderListFrom(row);
}

function senderListFrom(row: Row): SenderList {
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

/** Every allowlist naming `sender` (rotation swaps the key in them). */
export function senderListsNaming(sql: SQLTagStore, sender: string): SenderList[] {
  return sql.all`SELECT * FROM sender_lists
                 WHERE EXISTS (SELECT 1 FROM json_each(sender_lists.senders) WHERE value = ${sender})
                 ORDER BY target_pubkey`.map(senderListFrom);
}

/** The old key's allowlist becomes the new key's, unless the new key published its own. */
export function moveSenderList(sql: SQLTagStore, oldPubkey: string, newPubkey: string): void {
  sql.run`UPDATE OR IGNORE sender_lists SET target_pubkey = ${newPubkey} WHERE target_pubkey = ${oldPubkey}`;
}

export function hostRecordReader(use: UseSql): HostRecordReader {
  return {
    async encAd(hostPubkey) {
      return getEncAd(use(), hostPubkey);
    },
    async senderList(targetPubkey) {
      return getSenderList(use(), targetPubkey);
    },
    async senderListsNaming(senderPubkey) {
      return senderListsNaming(use(), senderPubkey);
    },
  };
}

export function hostRecordTransactor(use: UseSql): HostRecordTransactor {
  return {
    ...hostRecordReader(use),
    async putEncAd(ad) {
      putEncAd(use(), ad);
    },
    async putSenderList(list) {
      putSenderList(use(), list);
    },
    async moveSenderList(fromPubkey, toPubkey) {
      moveSenderList(use(), fromPubkey, toPubkey);
    },
  };
}
