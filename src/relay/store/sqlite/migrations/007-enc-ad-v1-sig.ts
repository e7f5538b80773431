// Schema 7: beside a host's signed v2 enc-key ad, the signature of its legacy v1 ad naming the same
// key (AgentMBX hosts publish both and republish until the relay reports the v1 one, protocol.md §3.8).
import type { Migration } from './migration.ts';

export const migration007: Migration = {
  version: 7,
  name: 'enc-key ads: the v1 signature beside a v2 ad',
  up(db) {
    db.exec('ALTER TABLE enc_ads ADD COLUMN v1_sig TEXT');
  },
};
