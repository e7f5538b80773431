import type { SQLTagStore } from 'node:sqlite';

/** The statement handle of the transaction in progress; throws once that transaction ended. */
export type UseSql = () => SQLTagStore;
