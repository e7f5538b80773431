// Directory mail on the wire: the host's directory carried as a normal sealed envelope from its
// `mbx` system sender to the peer's `mbx`, so that any relay carries it (it cannot read it). Only
// hosts that name DIRECTORY_MAIL_FEATURE in their status get it: to an AgentMBX host it would be
// mail to an unknown agent. This file holds the shapes alone (no store), so alerts and receive can
// tell such mail apart without loading the rest.
import { isPlainObject } from '../../protocol/validate.ts';
import { SYSTEM_SENDER } from '../core/route.ts';

/** The feature string our hosts name in GET /v1/status `features`: "I apply directory mail". */
export const DIRECTORY_MAIL_FEATURE = 'directory-mail';
export const DIRECTORY_MAIL_SUBJECT = 'agentmbx directory';
export const DIRECTORY_MAIL_KIND = 'status';
/** The body's `type`. */
export const DIRECTORY_MAIL_TYPE = 'agentmbx-directory';
/** Largest body of a directory mail (a longer directory is cut, last agents first); well under the envelope's 256 KiB. */
export const DIRECTORY_MAIL_MAX_BYTES = 128 * 1024;

/** The body: `{type, v:1, seq, host, features, agents}`; seq grows (milliseconds), a receiver keeps the highest. */
export interface DirectoryMailBody {
  type: typeof DIRECTORY_MAIL_TYPE;
  v: 1;
  seq: number;
  host: string;
  features: readonly unknown[];
  agents: readonly unknown[];
}

/** What makes a message directory mail: from `mbx@<its host>` to exactly `mbx@<recipient host>`, with the subject and kind above. */
export interface MailHead {
  from: string;
  to: readonly string[];
  subject: string;
  kind: string;
}

export function isDirectoryMail(head: MailHead, senderHost: string, recipientHost: string): boolean {
  return (
    head.from === `${SYSTEM_SENDER}@${senderHost}` &&
    head.to.length === 1 &&
    head.to[0] === `${SYSTEM_SENDER}@${recipientHost}` &&
    head.subject === DIRECTORY_MAIL_SUBJECT &&
    head.kind === DIRECTORY_MAIL_KIND
  );
}

/** Whether a message this host stored (`from_addr`, `to_json`…) is directory mail it sent: it never alerts anyone. */
export function isOwnDirectoryMail(msg: { from_addr: string; to_json: string; subject: string; kind: string; sender_host: string }): boolean {
  if (msg.from_addr !== `${SYSTEM_SENDER}@${msg.sender_host}` || msg.subject !== DIRECTORY_MAIL_SUBJECT || msg.kind !== DIRECTORY_MAIL_KIND) return false;
  const to = JSON.parse(msg.to_json) as unknown;
  return Array.isArray(to) && to.length === 1 && typeof to[0] === 'string' && to[0].startsWith(`${SYSTEM_SENDER}@`);
}

/** The opened body of a directory mail from `host`, or null when it is not one (hostile input). */
export function readDirectoryMailBody(text: string, host: string): DirectoryMailBody | null {
  let x: unknown;
  try {
    x = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isPlainObject(x) || x.type !== DIRECTORY_MAIL_TYPE || x.v !== 1 || x.host !== host) return null;
  if (typeof x.seq !== 'number' || !Number.isSafeInteger(x.seq) || x.seq < 1 || !Array.isArray(x.agents)) return null;
  return {
    type: DIRECTORY_MAIL_TYPE,
    v: 1,
    seq: x.seq,
    host,
    features: Array.isArray(x.features) ? (x.features as unknown[]) : [],
    agents: x.agents as unknown[],
  };
}
