// Schema 10: each message keeps its envelope's needs_reply flag and refs in columns of its own, so
// mail written here (no wire kept: it is sealed per host) reads the same as mail received.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration010: Migration = {
  version: 10,
  name: 'needs_reply and refs per message',
  up(db) {
    db.exec(`
      -- 1: the sender asked for a reply (the envelope's needs_reply). refs_json: its refs, a JSON array.
      ALTER TABLE messages ADD COLUMN needs_reply INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE messages ADD COLUMN refs_json TEXT NOT NULL DEFAULT '[]';
      -- Mail received: the stored wire says both.
      UPDATE messages SET needs_reply = json_extract(wire, '$.needs_reply') IS 1,
        refs_json = CASE json_type(wire, '$.refs') WHEN 'array' THEN json_extract(wire, '$.refs') ELSE '[]' END
        WHERE wire IS NOT NULL AND json_valid(wire);
      -- Mail written here: a copy still in the outbox says both (sealed, these fields travel in the
      -- clear); mail to local agents only had none, and showed a request as needing a reply.
      UPDATE messages SET needs_reply = kind = 'request' WHERE wire IS NULL;
      UPDATE messages SET (needs_reply, refs_json) = (
          SELECT json_extract(o.wire, '$.needs_reply') IS 1, json_extract(o.wire, '$.refs') FROM outbox o
          WHERE o.kind = 'envelope' AND o.msg_id = messages.id AND json_valid(o.wire) AND json_type(o.wire, '$.refs') = 'array'
          ORDER BY o.id LIMIT 1)
        WHERE wire IS NULL AND EXISTS (
          SELECT 1 FROM outbox o WHERE o.kind = 'envelope' AND o.msg_id = messages.id AND json_valid(o.wire) AND json_type(o.wire, '$.refs') = 'array');
    `);
  },
};
