// Schema 3: the command that prints an account token for a hosted relay.
import type { Migration } from '../../../common/sqlite-migrations.ts';

export const migration003: Migration = {
  version: 3,
  name: 'relay token command',
  up(db) {
    db.exec(`
      -- The shell command that prints an account token for a hosted relay (relay set --token-command);
      -- NULL: the relay enrols by host key alone. The token itself is never stored.
      ALTER TABLE relay ADD COLUMN token_command TEXT;
    `);
  },
};
