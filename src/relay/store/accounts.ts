// The accounts domain of the store: what a hosted relay (account tokens, design §8) keeps beside
// what every relay keeps: the cloud key each host key certified, and the revocation deny-list. Both are
// durable, so they survive a restart and travel with the store through backup and restore.

/** A deny-list entry names a host fingerprint or a token client_id. */
export type DenyKind = 'host_fp' | 'client_id';

export interface DenyEntry {
  kind: DenyKind;
  /** the canonical host fingerprint, or the client_id */
  value: string;
  reason: string;
  /** the entry stops applying at this time (ms) */
  untilMs: number;
  addedAt: number;
}

export interface AccountReader {
  /** the host key the cloud key (RFC 7638 thumbprint) is bound to, or null */
  cloudKeyOwner(jkt: string): Promise<string | null>;
  /** the thumbprint of the cloud key this host key certified, or null */
  cloudKeyOf(hostPubkey: string): Promise<string | null>;
  /** a live entry naming this host fingerprint or (when given) client id, or null */
  findDenyEntry(hostFp: string, clientId: string | null, nowMs: number): Promise<DenyEntry | null>;
  countLiveDenyEntries(nowMs: number): Promise<number>;
}

export interface AccountTransactor extends AccountReader {
  /** binds the cloud key to the host key, replacing either side's earlier binding */
  bindCloudKey(hostPubkey: string, jkt: string, nowMs: number): Promise<void>;
  /** adds entries (an existing one keeps the later `until`); removes some expired ones */
  putDenyEntries(entries: DenyEntry[], nowMs: number): Promise<void>;
}
