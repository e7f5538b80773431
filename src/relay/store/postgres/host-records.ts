// What a host publishes about itself, in PostgreSQL: its enc-key advertisement and its sender allowlist.
import type { EncAd, HostRecordReader, HostRecordTransactor, SenderList } from '../relay-store.ts';
import type { Row } from '../sql/columns.ts';
import { int, intOrNull, text, textOrNull } from '../sql/columns.ts';
import { droppingReadsAhead, type ReadAhead } from './read-ahead.ts';
import type { Sql, UsePg } from './sql.ts';

const SENDER_LIST = 'SELECT * FROM sender_lists WHERE target_pubkey = $1';
const senderListKey = (target: string): string => `senders ${target}`;

async function getEncAd(sql: Sql, hostPubkey: string): Promise<EncAd | null> {
  const row = await sql.row('SELECT * FROM enc_ads WHERE host_pubkey = $1', [hostPubkey]);
  if (row === undefined) return null;
  return {
    hostPubkey: text(row, 'host_pubkey'),
    encPub: text(row, 'enc_pub'),
    version: int(row, 'version') === 1 ? 1 : 2,
    record: textOrNull(row, 'record'),
    sig: text(row, 'sig'),
    iat: int(row, 'iat'),
    exp: intOrNull(row, 'exp'),
    at: int(row, 'at'),
    v1Sig: textOrNull(row, 'v1_sig'),
  };
}

async function putEncAd(sql: Sql, ad: EncAd): Promise<void> {
  await sql.run(
    `INSERT INTO enc_ads (host_pubkey, enc_pub, version, record, sig, iat, exp, at, v1_sig) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (host_pubkey) DO UPDATE SET enc_pub = excluded.enc_pub, version = excluded.version,
        record = excluded.record, sig = excluded.sig, iat = excluded.iat, exp = excluded.exp, at = excluded.at, v1_sig = excluded.v1_sig`,
    [ad.hostPubkey, ad.encPub, ad.version, ad.record, ad.sig, ad.iat, ad.exp, ad.at, ad.v1Sig],
  );
}

function sendersOf(value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((key) => typeof key === 'string'))
    throw new Error('relay store damaged: sender_lists.senders is not an array of keys');
  return value;
}

async function getSenderList(sql: Sql, targetPubkey: string): Promise<SenderList | null> {
  const row = await sql.row(SENDER_LIST, [targetPubkey]);
  return row === undefined ? null : senderListFrom(row);
}

/** Sends the target's sender list ahead (read-ahead.ts): a push reads it after the target's enrolment. */
export function readSenderListAhead(sql: Sql, readAhead: ReadAhead, targetPubkey: string): void {
  readAhead.keep(senderListKey(targetPubkey), sql.send(SENDER_LIST, [targetPubkey]));
}

function senderListFrom(row: Row): SenderList {
  return {
    targetPubkey: text(row, 'target_pubkey'),
    senders: sendersOf(row['senders']),
    iat: int(row, 'iat'),
    record: text(row, 'record'),
    sig: text(row, 'sig'),
  };
}

async function putSenderList(sql: Sql, list: SenderList): Promise<void> {
  await sql.run(
    `INSERT INTO sender_lists (target_pubkey, senders, iat, record, sig) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (target_pubkey) DO UPDATE SET senders = excluded.senders, iat = excluded.iat, record = excluded.record, sig = excluded.sig`,
    [list.targetPubkey, list.senders, list.iat, list.record, list.sig],
  );
}

export function hostRecordReader(use: UsePg): HostRecordReader {
  return {
    async encAd(hostPubkey) {
      return getEncAd(use(), hostPubkey);
    },
    async senderList(targetPubkey) {
      return getSenderList(use(), targetPubkey);
    },
    async senderListsNaming(senderPubkey) {
      return (await use().rows('SELECT * FROM sender_lists WHERE $1 = ANY(senders) ORDER BY target_pubkey', [senderPubkey])).map(senderListFrom);
    },
  };
}

export function hostRecordTransactor(use: UsePg, readAhead: ReadAhead): HostRecordTransactor {
  const writes: Omit<HostRecordTransactor, keyof HostRecordReader> = {
    async putEncAd(ad) {
      await putEncAd(use(), ad);
    },
    async putSenderList(list) {
      await putSenderList(use(), list);
    },
    async moveSenderList(fromPubkey, toPubkey) {
      await use().run(
        `UPDATE sender_lists SET target_pubkey = $2 WHERE target_pubkey = $1
          AND NOT EXISTS (SELECT 1 FROM sender_lists WHERE target_pubkey = $2)`,
        [fromPubkey, toPubkey],
      );
    },
  };
  return {
    ...hostRecordReader(use),
    async senderList(targetPubkey) {
      const ahead = readAhead.take(senderListKey(targetPubkey));
      if (ahead === undefined) return getSenderList(use(), targetPubkey);
      const row = await ahead;
      return row === undefined ? null : senderListFrom(row);
    },
    ...droppingReadsAhead(readAhead, writes),
  };
}
