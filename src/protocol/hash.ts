import { createHash } from 'node:crypto';

/** Lowercase hex SHA-256 of exact bytes (a `wire_hash`, protocol.md §1). */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}
