// `agentmbx mcp`'s work, loaded only when it runs (the MCP SDK and its schema libraries are most of
// a command's start-up): the stdio MCP server of one agent session. Stdout carries only the
// protocol; a session that cannot start (no host, a store that cannot be opened) still serves, with the reason.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CliError } from './cli-error.ts';
import { asCliError, openHomeNode } from './host-common.ts';
import { ensureAgent } from '../host/agent-mail.ts';
import { closeNode } from '../host/open-node.ts';
import { LAN_VERSION } from '../host/transport/lan/server.ts';
import { createMailServer } from '../mcp/server.ts';
import { createUnavailableServer } from '../mcp/unavailable.ts';
import type { HostNode } from '../host/core/node.ts';
import { CHANNEL_MODES, type ChannelMode } from '../mcp/channel.ts';
import { parseDuration } from './parse-args.ts';

/** The range of --progress-every: often enough for a client's timer, rarely enough to be no flood. */
const PROGRESS_EVERY_MIN_MS = 100;
const PROGRESS_EVERY_MAX_MS = 30_000;

export interface McpOptions {
  progressEvery: string;
  channel: string;
  agent?: string;
  role?: string;
  description?: string;
}

/** The session a client asked for: its agent (created if new) on the host in $MBX_HOME. */
function openSession(opts: McpOptions): { node: HostNode; agent: string; progressEveryMs: number; channel: ChannelMode } {
  const agent = opts.agent ?? process.env['MBX_AGENT'];
  if (agent === undefined || agent === '') throw new CliError("no agent: give --agent NAME or set MBX_AGENT in this MCP server's config", 'USAGE');
  const progressEveryMs = parseDuration(opts.progressEvery);
  if (progressEveryMs < PROGRESS_EVERY_MIN_MS || progressEveryMs > PROGRESS_EVERY_MAX_MS)
    throw new CliError('--progress-every must be from 100ms to 30s', 'USAGE');
  const channel = CHANNEL_MODES.find((m) => m === opts.channel);
  if (channel === undefined) throw new CliError(`--channel must be one of ${CHANNEL_MODES.join(', ')}`, 'USAGE');
  const node = openHomeNode();
  try {
    ensureAgent(node, agent, { role: opts.role, description: opts.description });
  } catch (err) {
    closeNode(node);
    throw asCliError(err);
  }
  return { node, agent, progressEveryMs, channel };
}

/** Serves `server` on stdin/stdout until the client goes (stdin closes) or a signal comes. */
async function serveUntilClosed(server: { connect(t: StdioServerTransport): Promise<void>; close(): Promise<void> }): Promise<void> {
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.connect(transport);
  await closed;
  await server.close();
}

/** Serves the session `opts` names until its client goes. */
export async function serveMcp(opts: McpOptions): Promise<void> {
  let session: ReturnType<typeof openSession>;
  try {
    session = openSession(opts);
  } catch (err) {
    // A person at a terminal gets the one-line failure and its exit code. A client gets a
    // handshake and the reason as the answer to every call (and the line on stderr, its log):
    // a server that exits before the handshake shows only "failed to connect".
    if (process.stdin.isTTY === true) throw err;
    const failure = asCliError(err);
    const reason = failure instanceof Error ? failure.message : String(failure);
    process.stderr.write(`agentmbx: ${reason}\n`);
    await serveUntilClosed(createUnavailableServer(reason, LAN_VERSION));
    return;
  }
  const { node, agent, progressEveryMs, channel } = session;
  const mail = createMailServer(node, agent, LAN_VERSION, { progressEveryMs, channel });
  await serveUntilClosed(mail.server);
  mail.stop();
  closeNode(node);
}
