// Schema 9: waking agents (src/host/wake/): per agent and wake path how far it was told, what each
// delivery's wake was, the loop guard's trips, Claude Code hook sessions, and how a remote
// recipient's agent was woken (from its receipt).
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration009: Migration = {
  version: 9,
  name: 'wake cursors, outcomes and loop guard',
  up(db) {
    db.exec(`
      -- How far each wake path (hook, channel, exec) told an agent: deliveries rowid up to mark.
      CREATE TABLE wake_cursors (
        agent TEXT NOT NULL,
        path TEXT NOT NULL,
        mark INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (agent, path)
      );

      -- Per delivery and wake path: woke 1 (the agent was told that way) or 0 (held, detail says why).
      CREATE TABLE wake_outcomes (
        msg_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        path TEXT NOT NULL,
        woke INTEGER NOT NULL,
        detail TEXT,
        at INTEGER NOT NULL,
        PRIMARY KEY (msg_id, agent, path)
      );

      -- The loop guard stopped waking for a thread: agents (pair) wrote count messages inside the
      -- window without a person, at message msg_id (messages rowid msg_row). Active while lifted_at is NULL; lift_mark is the messages rowid
      -- counting starts after once lifted.
      CREATE TABLE wake_guard_trips (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        thread TEXT NOT NULL,
        pair TEXT NOT NULL,
        count INTEGER NOT NULL,
        msg_id TEXT NOT NULL,
        msg_row INTEGER NOT NULL,
        tripped_at INTEGER NOT NULL,
        lifted_at INTEGER,
        lifted_by TEXT,
        lift_mark INTEGER
      );
      CREATE UNIQUE INDEX wake_guard_active ON wake_guard_trips(thread) WHERE lifted_at IS NULL;
      CREATE INDEX wake_guard_by_thread ON wake_guard_trips(thread, lift_mark);

      -- Stop-hook blocks per Claude Code session (the per-session budget); old rows are pruned.
      CREATE TABLE wake_hook_sessions (
        session_id TEXT NOT NULL,
        agent TEXT NOT NULL,
        stop_blocks INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, agent)
      );
      CREATE INDEX wake_hook_sessions_age ON wake_hook_sessions(updated_at);

      -- For mail this host sent: how the recipient host said its agent was woken (kept across later receipts).
      ALTER TABLE receipts ADD COLUMN wake TEXT;
    `);
  },
};
