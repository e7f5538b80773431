// Names and bounds both SQL backends store alike: the meta rows' keys, the counters' keys, the kinds
// the operations log may hold.
import type { OpsLogKind } from '../relay-store.ts';

export const META_EPOCH = 'epoch';
export const META_RELAY_PUBKEY = 'relay_pubkey';
export const META_SCHEMA_VERSION = 'schema_version';
export const META_HEARTBEAT_AT = 'heartbeat_at';
/** when the store was created (ms); for operators reading the file */
export const META_CREATED_AT = 'created_at';

/** the counter row of live enrolments, kept exact by every enrolment write */
export const LIVE_COUNTER = 'live_enrolments';

export const OPS_LOG_KINDS: readonly OpsLogKind[] = ['restore', 'epoch-rotated', 'backup'];
