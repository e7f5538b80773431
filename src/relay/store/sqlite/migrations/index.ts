// The binary's schema: migrations numbered 1..SCHEMA_VERSION, applied in order.
import { migration001 } from './001-initial.ts';
import { migration002 } from './002-ops-log.ts';
import { migration003 } from './003-hosted-relay.ts';
import { migration004 } from './004-dedup-by-target.ts';
import { migration005 } from './005-dedup-in-acceptance-order.ts';
import { latestVersion } from '../../../../common/sqlite-migrations.ts';
import { migration006 } from './006-shared-state.ts';
import { migration007 } from './007-enc-ad-v1-sig.ts';
import type { Migration } from './migration.ts';

export type { Migration } from './migration.ts';
export { latestVersion };

export const MIGRATIONS: readonly Migration[] = [migration001, migration002, migration003, migration004, migration005, migration006, migration007];

/** The schema this agentmbx writes; a store with a higher schema_version is refused. */
export const SCHEMA_VERSION = latestVersion(MIGRATIONS);
