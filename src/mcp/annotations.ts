// What each mbx_* tool does to the world, as MCP tool annotations, and the schema limits restated
// in each tool's description. Clients decide from the annotations whether a call needs the user's
// approval (Codex in `exec` calls a tool unasked only when it is read-only, or neither destructive
// nor open-world), and some drop `maxLength`/`maximum`/`maxItems` from the schemas they show the
// model, so the description is the only place the model still learns them.
//
// Honest hints, tool by tool: listing, reading, acking and waiting move the delivery state
// (notified, read, acked) and queue a receipt the sender sees, so they are not read-only; they
// stay inside this mail system (closed world) and only add state. Sending reaches other agents,
// who act on what they read: open world. Setting a role or description replaces the old one.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';

const READS: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const MOVES_DELIVERY_STATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export const TOOL_ANNOTATIONS: Readonly<Record<string, ToolAnnotations>> = {
  mbx_whoami: { title: 'Who am I', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  mbx_send: { title: 'Send mail', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  mbx_inbox: { title: 'List the inbox', ...MOVES_DELIVERY_STATE },
  mbx_read: { title: 'Read messages', ...MOVES_DELIVERY_STATE },
  mbx_ack: { title: 'Acknowledge messages', ...MOVES_DELIVERY_STATE },
  mbx_wait: { title: 'Wait for mail', ...MOVES_DELIVERY_STATE },
  mbx_thread: { title: 'Show a thread', ...READS },
  mbx_search: { title: 'Search mail', ...READS },
  mbx_agents: { title: 'List agents', ...READS },
  mbx_status: { title: 'Delivery status', ...READS },
};

/** Limits the schema cannot carry (checked by the host), per tool. */
const UNSCHEMED_LIMITS: Readonly<Record<string, readonly string[]>> = {
  mbx_send: [`body at most ${MAX_BODY_BYTES / 1024} KiB (UTF-8)`],
};

const UNITS = { maxLength: 'characters', maxItems: 'items', maximum: '' } as const;

/** "subject at most 200 characters; ids at most 50 items" for the limits in a tool's input schema. */
export function schemaLimits(inputSchema: Record<string, z.ZodType> | undefined): string[] {
  const limits: string[] = [];
  for (const [field, type] of Object.entries(inputSchema ?? {})) {
    const json = z.toJSONSchema(type, { unrepresentable: 'any' }) as Record<string, unknown>;
    for (const [key, unit] of Object.entries(UNITS)) {
      if (typeof json[key] === 'number') limits.push(`${field} at most ${json[key]}${unit === '' ? '' : ` ${unit}`}`);
    }
  }
  return limits;
}

interface ToolConfig {
  description?: string;
  inputSchema?: object;
  annotations?: ToolAnnotations;
}

/** The tool's config with its annotations and a "Limits: …" sentence added to the description. */
export function annotateTool<C extends ToolConfig>(name: string, config: C): C {
  const limits = [...schemaLimits(config.inputSchema as Record<string, z.ZodType> | undefined), ...(UNSCHEMED_LIMITS[name] ?? [])];
  const description = limits.length === 0 ? config.description : `${config.description ?? ''} Limits: ${limits.join('; ')}.`.trim();
  return { ...config, description, annotations: { ...TOOL_ANNOTATIONS[name], ...config.annotations } };
}

/** Every tool registered on `server` from now on gets its annotations and limits (see annotateTool). */
export function annotateMailTools(server: McpServer): void {
  const register = server.registerTool.bind(server);
  server.registerTool = ((name: string, config: ToolConfig, callback: never) =>
    register(name, annotateTool(name, config) as never, callback)) as typeof server.registerTool;
}
