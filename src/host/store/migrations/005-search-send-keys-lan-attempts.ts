// Schema 5: full-text search of mail, idempotent sends, agent descriptions, and open LAN attempts.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration005: Migration = {
  version: 5,
  name: 'search, send keys, descriptions, LAN attempts',
  up(db) {
    db.exec(`
      -- Full-text search over the subjects and bodies of stored mail. The index reads its text from
      -- messages (external content) and is kept by triggers, so it commits in the same transaction
      -- as the mail it indexes.
      CREATE VIRTUAL TABLE messages_fts USING fts5(subject, body, content = 'messages', content_rowid = 'rowid');
      CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, subject, body) VALUES (new.rowid, new.subject, new.body);
      END;
      CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, subject, body) VALUES ('delete', old.rowid, old.subject, old.body);
      END;
      INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
      CREATE INDEX messages_by_thread ON messages(thread, id);

      -- A send an agent asked for with an idempotency key: the same key from the same agent answers
      -- this message id instead of sending again.
      CREATE TABLE send_keys (
        agent TEXT NOT NULL,
        key TEXT NOT NULL,
        msg_id TEXT NOT NULL REFERENCES messages(id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (agent, key)
      );

      -- What an agent says it does, shown in the directory.
      ALTER TABLE agents ADD COLUMN description TEXT;

      -- When a LAN delivery attempt to the peer started, until it ends (NULL: none open). One still
      -- set when a daemon starts was cut short by a crash, and counts as a LAN failure.
      ALTER TABLE peers ADD COLUMN lan_attempt_at INTEGER;
    `);
  },
};
