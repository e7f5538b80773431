// `agentmbx mcp`: the stdio MCP server of one agent session. Its work lives in mcp-session.ts,
// loaded only when it runs: every other command starts without the MCP SDK.
import type { Command } from 'commander';
import { CHANNEL_MODES } from '../mcp/channel.ts';
import { WAIT_PROGRESS_DEFAULT_MS } from '../mcp/wait-limits.ts';
import type { McpOptions } from './mcp-session.ts';

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description('serve one agent session over MCP on stdin/stdout (the agent is created if new)')
    .option('--agent <name>', 'the agent this session is (default: $MBX_AGENT)')
    .option('--role <role>', "set the agent's role")
    .option('--description <text>', 'set what the agent does (shown to other agents)')
    .option(
      '--progress-every <duration>',
      'how often a long mbx_wait sends progress to a client that asked for it (100ms to 30s)',
      `${WAIT_PROGRESS_DEFAULT_MS / 1000}s`,
    )
    .option('--channel <mode>', `Claude Code's channel notices of new mail: ${CHANNEL_MODES.join(', ')} (auto: when the client is Claude Code)`, 'auto')
    .option('--json', 'at a terminal, a failure to start is {"error","code"} on stdout (once serving, stdout is the MCP stream)')
    .action(async (opts: McpOptions) => (await import('./mcp-session.ts')).serveMcp(opts));
}
