// The MCP server of a session that cannot serve (no host at the home, a store that cannot be
// opened, no agent named): it still completes the handshake, so the client shows the reason
// instead of "failed to connect", and answers every tool call with that one sentence.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SERVER_NAME } from './server.ts';
import { MAIL_TOOL_NAMES } from './tools.ts';

export function createUnavailableServer(reason: string, version: string): Server {
  const server = new Server({ name: SERVER_NAME, version }, { capabilities: { tools: {} }, instructions: `agentmbx cannot serve this session: ${reason}` });
  const refusal: CallToolResult = { isError: true, content: [{ type: 'text', text: `agentmbx cannot serve: ${reason}` }] };
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: MAIL_TOOL_NAMES.map((name) => ({ name, description: `Unavailable: ${reason}`, inputSchema: { type: 'object' as const } })),
  }));
  server.setRequestHandler(CallToolRequestSchema, () => refusal);
  return server;
}
