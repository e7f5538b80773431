// Schema 6: what this host learns about its peers beyond their keys: the agents each one lists
// (its directory), the features its status names, its presence beacons and the addresses its calls
// come from; and the agent's client (`cli`) shown in our own directory.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration006: Migration = {
  version: 6,
  name: 'peer directories and presence',
  up(db) {
    db.exec(`
      -- The client an agent's MCP session said it is (claude-code, codex…); NULL when unknown.
      ALTER TABLE agents ADD COLUMN cli TEXT;

      -- A peer's own agents as its directory last listed them (GET /v1/agents or directory mail):
      -- the whole set of a host is replaced at once.
      CREATE TABLE peer_agents (
        host TEXT NOT NULL,
        name TEXT NOT NULL,
        role TEXT,
        cli TEXT,
        description TEXT,
        last_seen TEXT,
        PRIMARY KEY (host, name)
      );

      -- One row per peer: when we last read its status and directory, what it said it supports,
      -- what directory mail we sent it, its last presence beacon and where its calls come from.
      CREATE TABLE peer_links (
        host TEXT PRIMARY KEY,
        features TEXT,
        status_at INTEGER,
        directory_at INTEGER,
        directory_seq INTEGER NOT NULL DEFAULT 0,
        served_at INTEGER,
        mail_digest TEXT,
        mail_at INTEGER,
        presence_seq INTEGER NOT NULL DEFAULT 0,
        presence_addrs TEXT,
        presence_at INTEGER,
        call_addr TEXT,
        call_at INTEGER
      );
    `);
  },
};
