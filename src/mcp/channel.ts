// Claude Code's channel (research preview, Claude Code ≥ 2.1.80) as a wake path: the server
// declares the experimental `claude/channel` capability and pushes a `notifications/claude/channel`
// notice for each new message of its agent; Claude Code shows it to the model as a <channel> tag in
// a session started with the channel flag, and drops it otherwise. A notice names the message
// (sender, trust, subject, id), never its body.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { HostNode } from '../host/core/node.ts';
import { noticeLine, takeWake } from '../host/wake/wake.ts';

export const CHANNEL_CAPABILITY = 'claude/channel';
export const CHANNEL_METHOD = 'notifications/claude/channel';
/** Notices pushed one by one per look at the store; more are told in one summary notice. */
export const CHANNEL_PUSH_MAX = 20;

/** auto: push when the client is Claude Code (by its name or a claude/channel capability); on, off: always, never. */
export const CHANNEL_MODES = ['auto', 'on', 'off'] as const;
export type ChannelMode = (typeof CHANNEL_MODES)[number];

export interface ChannelNotice {
  content: string;
  /** Claude Code shows meta as the tag's attributes: identifier keys, string values */
  meta: Record<string, string>;
}

/** Whether this session's client gets channel notices. */
export function channelWanted(mode: ChannelMode, server: Server): boolean {
  if (mode !== 'auto') return mode === 'on';
  const name = server.getClientVersion()?.name ?? '';
  const experimental = server.getClientCapabilities()?.experimental;
  return /^claude/i.test(name) || (experimental !== undefined && Object.hasOwn(experimental, CHANNEL_CAPABILITY));
}

export interface Channel {
  /** pushes what is new for the agent since the channel's last notice (no-op until the client initialized) */
  look(): void;
}

export function startChannel(server: Server, node: HostNode, agent: string, mode: ChannelMode): Channel {
  let ready = false;
  const push = (notice: ChannelNotice): void => {
    // a notice that cannot be sent means the client is gone: the server closes with its stdin
    server.notification({ method: CHANNEL_METHOD, params: notice } as unknown as Parameters<Server['notification']>[0]).catch(() => undefined);
  };
  const look = (): void => {
    if (!ready) return;
    const batch = takeWake(node, agent, 'channel');
    for (const { notice } of batch.woken.slice(0, CHANNEL_PUSH_MAX)) {
      push({
        content: `New mail: ${noticeLine(notice)}`,
        meta: { id: notice.id, from: notice.from, thread: notice.thread, kind: notice.kind, needs_reply: String(notice.needs_reply) },
      });
    }
    const more = batch.woken.length - CHANNEL_PUSH_MAX;
    if (more > 0) push({ content: `New mail: ${more} more unread message${more === 1 ? '' : 's'}; mbx_inbox lists them`, meta: { more: String(more) } });
  };
  const previous = server.oninitialized;
  server.oninitialized = () => {
    previous?.();
    ready = server.transport !== undefined && channelWanted(mode, server);
    look();
  };
  return { look };
}
