// Which clients get Claude Code channel notices: Claude Code (by its name or a claude/channel
// capability) under --channel auto; every client under on; none under off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { channelWanted } from '../../src/mcp/channel.ts';

function client(name: string, experimental?: Record<string, object>): Server {
  return {
    getClientVersion: () => ({ name, version: '1' }),
    getClientCapabilities: () => (experimental === undefined ? {} : { experimental }),
  } as unknown as Server;
}

test('channel notices go to Claude Code under auto, to every client under on, to none under off', () => {
  assert.equal(channelWanted('auto', client('claude-code')), true);
  assert.equal(channelWanted('auto', client('some-client', { 'claude/channel': {} })), true);
  assert.equal(channelWanted('auto', client('codex-mcp-client')), false);
  assert.equal(channelWanted('auto', client('cursor')), false);
  assert.equal(channelWanted('on', client('codex-mcp-client')), true);
  assert.equal(channelWanted('off', client('claude-code')), false);
});
