// A relay store migration is the shared kind (common/sqlite-migrations.ts).
export type { Migration } from '../../../../common/sqlite-migrations.ts';
