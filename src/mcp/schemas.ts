// The shapes the MCP tools answer with (output schemas), shared by several tools. Messages and
// recipient states are loose objects: a field the host adds later reaches the agent instead of
// failing the client's check of the output.
import { z } from 'zod';
import { DELIVERY_STATES } from '../host/store/mail-tables.ts';

export const messageSchema = z.looseObject({
  id: z.string().describe('message id (a ULID)'),
  from: z.string().describe('sender address, name@host'),
  to: z.array(z.string()).describe('the addresses as written by the sender'),
  kind: z.string(),
  subject: z.string(),
  body: z.string().optional().describe('the text; absent in listings (read the message to get it)'),
  thread: z.string().describe('id of the first message of the conversation'),
  reply_to: z.string().nullable(),
  ts: z.string().describe('when it was written (ISO 8601)'),
  state: z.enum(DELIVERY_STATES).nullable().describe('your delivery state: delivered, notified, read, acked; null for mail you sent'),
  note: z.string().nullable().describe('the ack note, if any'),
  trust: z.string().describe('who vouches for it: "local" or "signed by paired host X (fingerprint)"'),
  needs_reply: z.boolean().describe('the sender asked for a reply (answer with mbx_send and reply_to)'),
  refs: z.array(z.string()).describe("the sender's references: URLs, paths, commit ids"),
});

export const messagesSchema = { messages: z.array(messageSchema) };

export const recipientStatusSchema = z.looseObject({
  recipient: z.string(),
  host: z.string(),
  state: z.string().describe('delivered, notified, read, acked; or the outbox state while it travels'),
  at: z.string().nullable(),
  note: z.string().nullable(),
  wake: z
    .string()
    .nullable()
    .optional()
    .describe("how the recipient's agent was told: hook, channel, exec (several joined), none (with why), null if not known"),
});

export const directoryEntrySchema = z.object({
  address: z.string(),
  host: z.string(),
  where: z.enum(['here', 'peer']).describe('here: a mailbox on this host; peer: an agent of a paired host (its host lists it, or mail came from it)'),
  role: z.string().nullable(),
  cli: z.string().nullable().describe('the client the agent runs in, when known'),
  description: z.string().nullable(),
  last_seen: z.string().nullable().describe('when it last sent mail (ISO 8601), as its host or the mail stored here tells'),
});
