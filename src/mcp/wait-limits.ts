// How long mbx_wait may block, in a module of its own: `agentmbx`'s command tree names the progress
// default in its help without loading the MCP server and its libraries (src/cli/mcp.ts).

/** mbx_wait without timeout_s. */
export const WAIT_DEFAULT_S = 30;
/**
 * The longest mbx_wait of a client that asked for no progress notifications: under the 60 s after
 * which the MCP SDK's clients (and the Inspector) give up on a call.
 */
export const WAIT_PLAIN_MAX_S = 50;
/** How often a wait tells a client that sent a progressToken that it is still waiting (`agentmbx mcp --progress-every`). */
export const WAIT_PROGRESS_DEFAULT_MS = 5_000;
