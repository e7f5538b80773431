// What `agentmbx setup <client>` writes for each client, and how `setup --check` / `doctor` judge
// what they find. A plan is a list of steps (a command of the client's own CLI to run, a file to
// write); an empty plan means the client is set up as asked already.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ConfigFileError,
  isObject,
  jsonText,
  readJsonObject,
  readText,
  readToml,
  replaceTomlTable,
  sameValue,
  tableOf,
  type JsonObject,
} from './config-files.ts';
import { hookCommandLine, launchAgent, launchDrift, mcpCommand, type Launch } from './launch.ts';
import type { DoctorCheck } from '../host/core/doctor-check.ts';
import { MAIL_WAIT_MAX_MS } from '../host/mail-watch.ts';

/** The name our MCP server is registered under in every client (Claude Code tool names: mcp__agentmbx__…). */
export const SERVER_KEY = 'agentmbx';
/** Codex's per-call timeout for our tools: mbx_wait may block MAIL_WAIT_MAX_MS, plus a margin. */
export const CODEX_TOOL_TIMEOUT_SEC = MAIL_WAIT_MAX_MS / 1000 + 60;
/** How long Codex waits for the server to start (a loaded machine starts Node slowly). */
export const CODEX_STARTUP_TIMEOUT_SEC = 30;
/** The tools a client still asks approval for (they reach other agents: open world); allowed only with --yes. */
export const OPEN_WORLD_TOOLS = ['mbx_send'] as const;
/** Claude Code's permission rule for every tool of our server. */
export const CLAUDE_PERMISSION = `mcp__${SERVER_KEY}`;
const CLAUDE_HOOK_EVENTS = { SessionStart: 'session-start', UserPromptSubmit: 'user-prompt-submit', Stop: 'stop' } as const;

export const CLIENTS = ['claude', 'codex', 'cursor', 'gemini'] as const;
export type ClientName = (typeof CLIENTS)[number];
export type Scope = 'user' | 'project';

export interface Where {
  scope: Scope;
  /** the project folder (project scope) */
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export interface SetupRequest extends Where {
  launch: Launch;
  agent: string;
  /** the user allowed what runs without asking (Claude's permission, Codex's approval of open-world tools) */
  yes: boolean;
}

export type Step = { kind: 'run'; argv: string[]; summary: string } | { kind: 'write'; path: string; text: string; summary: string };

export type CheckState = 'ok' | 'missing' | 'drifted';

export interface ClientCheck {
  client: ClientName;
  scope: Scope;
  state: CheckState;
  agent: string | null;
  /** where the entry lives */
  path: string;
  problems: string[];
  /** the command that fixes it (null when ok) */
  fix: string | null;
}

function home(env: NodeJS.ProcessEnv): string {
  return env['HOME'] ?? '';
}

/** `agentmbx setup …` that writes this client's entry again. */
function fixCommand(client: ClientName, scope: Scope, agent: string | null): string {
  return `agentmbx setup ${client} --agent ${agent ?? 'NAME'}${scope === 'project' ? ' --scope project' : ''}`;
}

function judge(client: ClientName, where: Where, path: string, agent: string | null, present: boolean, problems: string[]): ClientCheck {
  const state: CheckState = !present ? 'missing' : problems.length > 0 ? 'drifted' : 'ok';
  return { client, scope: where.scope, state, agent, path, problems, fix: state === 'ok' ? null : fixCommand(client, where.scope, agent) };
}

function writeJsonStep(path: string, before: JsonObject, after: JsonObject, summary: string): Step[] {
  return sameValue(before, after) ? [] : [{ kind: 'write', path, text: jsonText(after), summary }];
}

// ---- MCP servers in a JSON file (Cursor, Gemini): { "mcpServers": { "agentmbx": {command, args, env} } }

function jsonServerEntry(req: SetupRequest, extra: JsonObject = {}): JsonObject {
  return { ...mcpCommand(req.launch, req.agent), env: { MBX_HOME: req.launch.home }, ...extra };
}

function withServer(doc: JsonObject, entry: JsonObject | null): JsonObject {
  const servers = isObject(doc['mcpServers']) ? { ...doc['mcpServers'] } : {};
  if (entry === null) delete servers[SERVER_KEY];
  else servers[SERVER_KEY] = entry;
  return { ...doc, mcpServers: servers };
}

interface JsonClient {
  path(where: Where): string;
  extra?: JsonObject;
}

const JSON_CLIENTS: Record<'cursor' | 'gemini', JsonClient> = {
  // Cursor: ~/.cursor/mcp.json, or .cursor/mcp.json in a project
  cursor: { path: (w) => (w.scope === 'user' ? join(home(w.env), '.cursor', 'mcp.json') : join(w.cwd, '.cursor', 'mcp.json')) },
  // Gemini CLI: ~/.gemini/settings.json, or .gemini/settings.json in a project; `timeout` is per call, in ms
  gemini: {
    path: (w) => (w.scope === 'user' ? join(home(w.env), '.gemini', 'settings.json') : join(w.cwd, '.gemini', 'settings.json')),
    extra: { timeout: CODEX_TOOL_TIMEOUT_SEC * 1000 },
  },
};

function planJsonClient(client: JsonClient, req: SetupRequest, remove: boolean): Step[] {
  const path = client.path(req);
  const doc = readJsonObject(path);
  const after = withServer(doc, remove ? null : jsonServerEntry(req, client.extra));
  if (remove && !isObject(doc['mcpServers'])) return [];
  return writeJsonStep(path, doc, after, remove ? `remove mcpServers.${SERVER_KEY}` : `set mcpServers.${SERVER_KEY} (agent ${req.agent})`);
}

function serverIn(doc: JsonObject): JsonObject | undefined {
  const servers = doc['mcpServers'];
  return isObject(servers) && isObject(servers[SERVER_KEY]) ? servers[SERVER_KEY] : undefined;
}

function checkJsonClient(name: 'cursor' | 'gemini', where: Where, agent: string | null): ClientCheck {
  const path = JSON_CLIENTS[name].path(where);
  const entry = serverIn(readJsonObject(path));
  const found = launchAgent(entry?.['args']);
  return judge(name, where, path, agent ?? found, entry !== undefined, entry === undefined ? [] : launchDrift(entry, agent));
}

// ---- Codex: [mcp_servers.agentmbx] in config.toml (~/.codex or $CODEX_HOME, or .codex in a project)

function codexConfigPath(where: Where): string {
  if (where.scope === 'project') return join(where.cwd, '.codex', 'config.toml');
  return join(where.env['CODEX_HOME'] ?? join(home(where.env), '.codex'), 'config.toml');
}

const CODEX_TABLE = `mcp_servers.${SERVER_KEY}`;

function codexEntry(req: SetupRequest, current: JsonObject | undefined): JsonObject {
  // an approval the user gave before is kept: setup run again without --yes does not revoke it
  const approved = (tool: string): boolean => {
    const tools = current?.['tools'];
    return req.yes || (isObject(tools) && isObject(tools[tool]) && tools[tool]['approval_mode'] === 'approve');
  };
  const tools: JsonObject = {};
  for (const tool of OPEN_WORLD_TOOLS) if (approved(tool)) tools[tool] = { approval_mode: 'approve' };
  return {
    ...mcpCommand(req.launch, req.agent),
    // Codex leaves a server that is still starting out of the first turn: required makes it wait
    required: true,
    startup_timeout_sec: CODEX_STARTUP_TIMEOUT_SEC,
    tool_timeout_sec: CODEX_TOOL_TIMEOUT_SEC,
    env: { MBX_HOME: req.launch.home },
    ...(Object.keys(tools).length === 0 ? {} : { tools }),
  };
}

function planCodex(req: SetupRequest, remove: boolean): Step[] {
  const path = codexConfigPath(req);
  const text = readText(path) ?? '';
  const current = tableOf(readToml(path), CODEX_TABLE);
  if (remove && current === undefined) return [];
  const entry = remove ? null : codexEntry(req, current);
  if (!remove && sameValue(current, entry)) return [];
  return [
    {
      kind: 'write',
      path,
      text: replaceTomlTable(path, text, CODEX_TABLE, entry),
      summary: remove
        ? `remove [${CODEX_TABLE}]`
        : `set [${CODEX_TABLE}] (agent ${req.agent}, required, tool_timeout_sec ${CODEX_TOOL_TIMEOUT_SEC}${entry?.['tools'] === undefined ? '' : ', mbx_send approved'})`,
    },
  ];
}

function checkCodex(where: Where, agent: string | null): ClientCheck {
  const path = codexConfigPath(where);
  const entry = tableOf(readToml(path), CODEX_TABLE);
  const problems = entry === undefined ? [] : launchDrift(entry, agent);
  if (entry !== undefined && entry['required'] !== true) problems.push('required is not true (Codex may start its first turn without the mail tools)');
  return judge('codex', where, path, agent ?? launchAgent(entry?.['args']), entry !== undefined, problems);
}

// ---- Claude Code: the server through `claude mcp add`, hooks and the permission in settings JSON

function claudeConfigDir(env: NodeJS.ProcessEnv): string {
  return env['CLAUDE_CONFIG_DIR'] ?? join(home(env), '.claude');
}

/** Where `claude mcp add -s <scope>` keeps the server: ~/.claude.json (or in CLAUDE_CONFIG_DIR), or the project's .mcp.json. */
function claudeServersPath(where: Where): string {
  if (where.scope === 'project') return join(where.cwd, '.mcp.json');
  return where.env['CLAUDE_CONFIG_DIR'] === undefined ? join(home(where.env), '.claude.json') : join(where.env['CLAUDE_CONFIG_DIR'], '.claude.json');
}

function claudeSettingsPath(where: Where): string {
  return where.scope === 'project' ? join(where.cwd, '.claude', 'settings.json') : join(claudeConfigDir(where.env), 'settings.json');
}

const OUR_HOOK = /\bhook claude (session-start|user-prompt-submit|stop)\b/;

interface HookGroup {
  matcher?: string;
  hooks?: Array<{ type?: string; command?: string }>;
}

function hookGroups(settings: JsonObject, event: string): HookGroup[] {
  const hooks = settings['hooks'];
  const groups = isObject(hooks) ? hooks[event] : undefined;
  return Array.isArray(groups) ? (groups.filter(isObject) as HookGroup[]) : [];
}

function ourHookCommands(settings: JsonObject, event: string): string[] {
  return hookGroups(settings, event).flatMap((g) => (g.hooks ?? []).map((h) => h.command ?? '').filter((c) => OUR_HOOK.test(c)));
}

/** The settings with our hooks for each event replaced by `commands` (none: removed), other hooks kept. */
function withHooks(settings: JsonObject, commands: Partial<Record<string, string>>): JsonObject {
  const hooks: JsonObject = isObject(settings['hooks']) ? { ...settings['hooks'] } : {};
  for (const event of Object.keys(CLAUDE_HOOK_EVENTS)) {
    const groups = hookGroups(settings, event)
      .map((g) => ({ ...g, hooks: (g.hooks ?? []).filter((h) => !OUR_HOOK.test(h.command ?? '')) }))
      .filter((g) => g.hooks.length > 0);
    const command = commands[event];
    if (command !== undefined) groups.push({ hooks: [{ type: 'command', command }] });
    if (groups.length > 0) hooks[event] = groups;
    else delete hooks[event];
  }
  const out: JsonObject = { ...settings, hooks };
  if (Object.keys(hooks).length === 0) delete out['hooks'];
  return out;
}

function withPermission(settings: JsonObject, allow: boolean): JsonObject {
  const permissions: JsonObject = isObject(settings['permissions']) ? { ...settings['permissions'] } : {};
  const rules = Array.isArray(permissions['allow']) ? (permissions['allow'] as unknown[]).filter((r) => r !== CLAUDE_PERMISSION) : [];
  if (allow) rules.push(CLAUDE_PERMISSION);
  if (rules.length > 0) permissions['allow'] = rules;
  else delete permissions['allow'];
  const out: JsonObject = { ...settings, permissions };
  if (Object.keys(permissions).length === 0) delete out['permissions'];
  return out;
}

function hasPermission(settings: JsonObject): boolean {
  const permissions = settings['permissions'];
  return isObject(permissions) && Array.isArray(permissions['allow']) && permissions['allow'].includes(CLAUDE_PERMISSION);
}

function claudeServer(where: Where): JsonObject | undefined {
  return serverIn(readJsonObject(claudeServersPath(where)));
}

function planClaude(req: SetupRequest, remove: boolean, claude: string): Step[] {
  const steps: Step[] = [];
  const scope = ['-s', req.scope];
  const current = claudeServer(req);
  const { command, args } = mcpCommand(req.launch, req.agent);
  const wanted = { command, args, env: { MBX_HOME: req.launch.home } };
  const same = current !== undefined && sameValue({ command: current['command'], args: current['args'], env: current['env'] }, wanted);
  if (current !== undefined && (remove || !same))
    steps.push({ kind: 'run', argv: [claude, 'mcp', 'remove', ...scope, SERVER_KEY], summary: `remove the MCP server ${SERVER_KEY}` });
  if (!remove && !same) {
    steps.push({
      kind: 'run',
      argv: [claude, 'mcp', 'add', ...scope, SERVER_KEY, '-e', `MBX_HOME=${req.launch.home}`, '--', command, ...args],
      summary: `add the MCP server ${SERVER_KEY} (agent ${req.agent})`,
    });
  }
  const path = claudeSettingsPath(req);
  const settings = readJsonObject(path);
  const commands: Record<string, string> = {};
  if (!remove) for (const [event, arg] of Object.entries(CLAUDE_HOOK_EVENTS)) commands[event] = hookCommandLine(req.launch, 'claude', arg, req.agent);
  const after = withPermission(withHooks(settings, commands), !remove && (req.yes || hasPermission(settings)));
  const what = remove
    ? 'remove the agentmbx hooks and permission'
    : `set the SessionStart, UserPromptSubmit and Stop hooks${req.yes || hasPermission(settings) ? ` and allow ${CLAUDE_PERMISSION}` : ''}`;
  steps.push(...writeJsonStep(path, settings, after, what));
  return steps;
}

function checkClaude(where: Where, agent: string | null): ClientCheck {
  const server = claudeServer(where);
  const settings = readJsonObject(claudeSettingsPath(where));
  const found = agent ?? launchAgent(server?.['args']);
  const problems = server === undefined ? [] : launchDrift(server, found);
  const hooks = Object.keys(CLAUDE_HOOK_EVENTS).map((event) => [event, ourHookCommands(settings, event)] as const);
  const anyHook = hooks.some(([, commands]) => commands.length > 0);
  if (server === undefined && anyHook) problems.push(`the MCP server ${SERVER_KEY} is not configured`);
  for (const [event, commands] of hooks) {
    if (commands.length === 0 && (server !== undefined || anyHook)) problems.push(`the ${event} hook was removed`);
    for (const command of commands) {
      const named = /--agent\s+'?([a-z0-9-]+)/.exec(command)?.[1] ?? null;
      if (found !== null && named !== found) problems.push(`the ${event} hook is agent ${String(named)}, not ${found}`);
      for (const path of command.match(/(?<=\s|^|')\/[^\s']+/g) ?? []) if (!existsSync(path)) problems.push(`the ${event} hook's ${path} does not exist`);
    }
  }
  return judge('claude', where, claudeServersPath(where), found, server !== undefined || anyHook, problems);
}

// ---- the clients

export function planSetup(client: ClientName, req: SetupRequest, remove: boolean, claudeCommand = 'claude'): Step[] {
  switch (client) {
    case 'claude':
      return planClaude(req, remove, claudeCommand);
    case 'codex':
      return planCodex(req, remove);
    case 'cursor':
    case 'gemini':
      return planJsonClient(JSON_CLIENTS[client], req, remove);
  }
}

export function checkClient(client: ClientName, where: Where, agent: string | null): ClientCheck {
  switch (client) {
    case 'claude':
      return checkClaude(where, agent);
    case 'codex':
      return checkCodex(where, agent);
    case 'cursor':
    case 'gemini':
      return checkJsonClient(client, where, agent);
  }
}

/** Every client in both scopes (the project being `cwd`). */
export function checkAllClients(cwd: string, env: NodeJS.ProcessEnv, agent: string | null, only?: ClientName): ClientCheck[] {
  const checks: ClientCheck[] = [];
  for (const client of only === undefined ? CLIENTS : [only]) {
    // in the home folder the project's files are the user's: one scope only
    for (const scope of resolve(cwd) === resolve(home(env)) ? (['user'] as const) : (['user', 'project'] as const)) {
      const where = { scope, cwd, env };
      try {
        checks.push(checkClient(client, where, agent));
      } catch (err) {
        if (!(err instanceof ConfigFileError)) throw err;
        checks.push(judge(client, where, '', agent, true, [err.message]));
      }
    }
  }
  return checks;
}

/** Doctor's lines for the clients set up here (a client never set up is not doctor's business). */
export function clientDoctorChecks(cwd: string, env: NodeJS.ProcessEnv): DoctorCheck[] {
  return checkAllClients(cwd, env, null)
    .filter((c) => c.state !== 'missing')
    .map((c) => ({
      check: `client ${c.client} (${c.scope})`,
      level: c.state === 'ok' ? 'ok' : 'warn',
      detail: c.state === 'ok' ? `agentmbx set up for agent ${c.agent ?? '?'}` : `drifted: ${c.problems.join('; ')} (${c.fix ?? ''})`,
    }));
}
