import { randomBytes } from 'node:crypto';

/** A fresh store epoch (design §5): 16 random bytes, base64url. Every backend draws them the same way. */
export function randomEpoch(): string {
  return randomBytes(16).toString('base64url');
}
