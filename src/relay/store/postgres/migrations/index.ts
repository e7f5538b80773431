// The PostgreSQL store's schema: migrations numbered 1..POSTGRES_SCHEMA_VERSION, applied in order.
// Numbered apart from the SQLite store's: each backend's schema_version counts its own steps.
import { latestVersion } from '../../../../common/sqlite-migrations.ts';
import { migration001 } from './001-initial.ts';
import { migration002 } from './002-shared-state.ts';
import { migration003 } from './003-enc-ad-v1-sig.ts';
import type { PostgresMigration } from './migration.ts';

export type { PostgresMigration } from './migration.ts';

export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [migration001, migration002, migration003];

export const POSTGRES_SCHEMA_VERSION = latestVersion(POSTGRES_MIGRATIONS);
