// What this host speaks beyond protocol.md §5, listed as `features` in its GET /v1/status. A peer of
// ours reads it to know what it may send (an AgentMBX host has no such member, so it gets only §5).
// One entry per feature, named in docs/protocol.md §5; add new ones here.
import { DIRECTORY_MAIL_FEATURE } from '../../directory/wire.ts';

export const HOST_FEATURES: readonly string[] = [
  // POST /v1/pair/join and its accept carry the side's signed v1 enc-key ad as `enc`
  'pair-enc-ad',
  // mail from our `mbx` to the peer's `mbx` carrying our directory is applied, not delivered (directory/mail.ts)
  DIRECTORY_MAIL_FEATURE,
];
