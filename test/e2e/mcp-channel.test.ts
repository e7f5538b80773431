// Claude Code's channel, checked with the MCP SDK's client against the real `agentmbx mcp`: the
// capability and instructions, a notice per new message (the backlog at start and mail that lands
// later), never a body, and status saying the channel woke the agent. A real Claude Code session
// with channels needs a claude.ai login (the research preview refuses API-key logins), which tests
// cannot have: the notification's shape is what Claude Code's channels reference documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';
import { CLI_BIN, trackGroup } from '../helpers/processes.ts';
import { withDeadline } from '../helpers/wait.ts';
import { cli, cliJson, E2E_TIMEOUT_MS, newCliHost } from './host-helpers.ts';

const ChannelNotification = z.object({
  method: z.literal('notifications/claude/channel'),
  params: z.object({ content: z.string(), meta: z.record(z.string(), z.string()) }),
});
type ChannelNotice = z.infer<typeof ChannelNotification>['params'];

test('agentmbx mcp pushes a Claude Code channel notice per new message: sender, trust, subject, id; never the body', { timeout: E2E_TIMEOUT_MS }, async () => {
  const host = await newCliHost('ch', ['ann', 'bo']);
  const first = (await cli(host, ['send', '--from', 'bo', '--to', 'ann', '--subject', 'waiting for you', '--kind', 'request', '--body', 'secret body'])).trim();
  const transport = new StdioClientTransport({
    command: 'setsid',
    args: [CLI_BIN, 'mcp', '--agent', 'ann'],
    env: { ...host.env, PATH: process.env['PATH'] ?? '' },
    stderr: 'pipe',
  });
  // the name Claude Code's client gives: the channel is on for it (--channel auto)
  const client = new Client({ name: 'claude-code', version: '2.1.332' });
  const notices: ChannelNotice[] = [];
  let waiter: (() => void) | null = null;
  client.setNotificationHandler(ChannelNotification, (n) => {
    notices.push(n.params);
    waiter?.();
  });
  const noticeCount = (n: number): Promise<void> =>
    withDeadline(
      `${n} channel notices`,
      60_000,
      new Promise<void>((resolve) => {
        waiter = () => {
          if (notices.length >= n) resolve();
        };
        waiter();
      }),
    );
  await client.connect(transport);
  const kill = trackGroup(transport.pid as number);
  try {
    assert.deepEqual(client.getServerCapabilities()?.experimental?.['claude/channel'], {});
    assert.match(client.getInstructions() ?? '', /<channel source="agentmbx"/);
    assert.match(client.getInstructions() ?? '', /mbx_read/);
    await noticeCount(1);
    assert.deepEqual(notices[0], {
      content: `New mail: ${first} from bo@ch (local): waiting for you [needs reply]`,
      meta: { id: first, from: 'bo@ch', thread: first, kind: 'request', needs_reply: 'true' },
    });
    const second = (await cli(host, ['send', '--from', 'bo', '--to', 'ann', '--subject', 'later', '--body', 'secret body', '--reply-to', first])).trim();
    await noticeCount(2);
    assert.deepEqual(notices[1]?.meta, { id: second, from: 'bo@ch', thread: first, kind: 'message', needs_reply: 'false' });
    assert.ok(notices.every((n) => !JSON.stringify(n).includes('secret body')));
    const status = await cliJson<{ recipients: Array<{ state: string; wake: string }> }>(host, ['status', first]);
    assert.deepEqual(
      status.recipients.map((r) => [r.state, r.wake]),
      [['notified', 'channel']],
    );
  } finally {
    await client.close();
    kill();
  }
});
