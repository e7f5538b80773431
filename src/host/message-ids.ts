// Message ids as agents and people type them: any case (a ULID is case-insensitive), or a unique
// prefix of at least ID_PREFIX_MIN_CHARS characters; and which agent of this host holds a message
// when none was named. The CLI and the MCP tools both resolve ids here.
import { MailboxError } from './mailbox.ts';
import { localAddress, type HostNode } from './core/node.ts';

/** The shortest id prefix taken: 8 characters fix a ULID's time to about a second (1,024 ms). */
export const ID_PREFIX_MIN_CHARS = 8;
/** How many candidates a refused ambiguous prefix names. */
export const ID_CANDIDATES_SHOWN = 5;

const ULID_CHARS = 26;
const ID_CHAR_RE = /^[0-9A-Z]+$/;

/**
 * The full id of the message `typed` names, among `agent`'s mail (sent or received) or, without an
 * agent, among all mail on this host. A full-length id comes back upper-cased and unchecked (the
 * caller's lookup names it when it does not exist); a shorter one must start exactly one id.
 */
export function resolveMessageId(node: HostNode, typed: string, agent: string | null): string {
  const text = typed.trim().toUpperCase();
  if (!ID_CHAR_RE.test(text)) return typed;
  if (text.length >= ULID_CHARS) return text;
  if (text.length < ID_PREFIX_MIN_CHARS) {
    throw new MailboxError(
      `message id "${typed}" is too short: give the whole id (26 characters, as the inbox shows) or at least its first ${ID_PREFIX_MIN_CHARS}`,
      'invalid',
    );
  }
  const scope = agent === null ? null : { name: agent, address: localAddress(node, agent) };
  const found = node.store.agentMail.idsWithPrefix(text, ID_CANDIDATES_SHOWN + 1, scope);
  const [only] = found;
  if (found.length === 1 && only !== undefined) return only;
  const whose = agent === null ? 'on this host' : `sent or received by ${agent}`;
  if (found.length === 0) throw new MailboxError(`no message id starts with ${text} ${whose}: take an id from the inbox or a search`, 'not-found');
  const shown = found.slice(0, ID_CANDIDATES_SHOWN).join(', ');
  throw new MailboxError(
    `the id prefix ${text} fits ${found.length > ID_CANDIDATES_SHOWN ? `more than ${ID_CANDIDATES_SHOWN}` : found.length} messages (${shown}): give more characters`,
    'invalid',
  );
}

/**
 * The agent of this host that holds message `id` (received it, or sent it): the agent a command
 * acts for when none was named. Refused when none or several do.
 */
export function agentHolding(node: HostNode, id: string): string {
  const msg = node.store.mail.message(id);
  if (msg === undefined) throw new MailboxError(`no message ${id} on this host: take an id from the inbox or a search`, 'not-found');
  const holders = new Set(node.store.mail.deliveriesOf(id).map((d) => d.agent));
  const sender = msg.direction === 'out' ? msg.from_addr.slice(0, msg.from_addr.lastIndexOf('@')) : null;
  if (sender !== null && localAddress(node, sender) === msg.from_addr && node.store.mail.agent(sender) !== undefined) holders.add(sender);
  const [only, ...more] = [...holders].sort();
  if (only === undefined) throw new MailboxError(`no agent of this host holds message ${id}`, 'not-found');
  if (more.length > 0) throw new MailboxError(`message ${id} is held by ${[only, ...more].join(', ')}: give --agent NAME (or set MBX_AGENT)`, 'invalid');
  return only;
}
