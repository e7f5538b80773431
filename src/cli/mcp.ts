// `agentmbx mcp`: the stdio MCP server of one agent session. Stdout carries only the protocol;
// a store that cannot be opened ends the command with a one-line reason before it serves.
import type { Command } from 'commander';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CliError } from './cli-error.ts';
import { asCliError, openHomeNode } from './host-common.ts';
import { ensureAgent } from '../host/agent-mail.ts';
import { closeNode } from '../host/open-node.ts';
import { LAN_VERSION } from '../host/transport/lan/server.ts';
import { createMailServer } from '../mcp/server.ts';
import { CHANNEL_MODES } from '../mcp/channel.ts';

interface McpOptions {
  channel: string;
  agent?: string;
  role?: string;
  description?: string;
}

export function registerMcpCommand(program: Command): void {
  program.command('mcp')
    .description('serve one agent session over MCP on stdin/stdout (the agent is created if new)')
    .option('--agent <name>', 'the agent this session is (default: $MBX_AGENT)')
    .option('--role <role>', 'set the agent\'s role')
    .option('--description <text>', 'set what the agent does (shown to other agents)')
    .option('--channel <mode>', `Claude Code's channel notices of new mail: ${CHANNEL_MODES.join(', ')} (auto: when the client is Claude Code)`, 'auto')
    .option('--json', 'a failure to start is {"error","code"} on stdout (once serving, stdout is the MCP stream)')
    .action(async (opts: McpOptions) => {
      const agent = opts.agent ?? process.env['MBX_AGENT'];
      if (agent === undefined || agent === '') throw new CliError('no agent: give --agent NAME or set MBX_AGENT', 'USAGE');
      const channel = CHANNEL_MODES.find((m) => m === opts.channel);
      if (channel === undefined) throw new CliError(`--channel must be one of ${CHANNEL_MODES.join(', ')}`, 'USAGE');
      const node = openHomeNode();
      try {
        ensureAgent(node, agent, { role: opts.role, description: opts.description });
      } catch (err) {
        closeNode(node);
        throw asCliError(err);
      }
      const mail = createMailServer(node, agent, LAN_VERSION, { channel });
      const transport = new StdioServerTransport();
      const closed = new Promise<void>((resolve) => {
        transport.onclose = resolve;
        process.stdin.once('end', resolve);
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await mail.server.connect(transport);
      await closed;
      mail.stop();
      await mail.server.close();
      closeNode(node);
    });
}
