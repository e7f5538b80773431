// The host store's schema: migrations numbered 1..SCHEMA_VERSION, applied in order by the shared
// runner (common/sqlite-migrations.ts). The version lives in PRAGMA user_version.
import { latestVersion, type Migration } from '../../../common/sqlite-migrations.ts';
import { migration001 } from './001-initial.ts';
import { migration002 } from './002-relay.ts';
import { migration003 } from './003-relay-token-command.ts';
import { migration004 } from './004-relay-refusals-and-meta.ts';
import { migration005 } from './005-search-send-keys-lan-attempts.ts';
import { migration006 } from './006-peer-directory-presence.ts';
import { migration007 } from './007-bodies-as-bytes.ts';
import { migration008 } from './008-quarantine-dismissed.ts';
import { migration009 } from './009-wake.ts';
import { migration010 } from './010-reply-flag-and-refs.ts';

export const MIGRATIONS: readonly Migration[] = [
  migration001,
  migration002,
  migration003,
  migration004,
  migration005,
  migration006,
  migration007,
  migration008,
  migration009,
  migration010,
];

/** The schema this agentmbx writes; a store with a higher user_version is refused. */
export const SCHEMA_VERSION = latestVersion(MIGRATIONS);
