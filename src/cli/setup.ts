// `agentmbx setup <client> --agent NAME`: writes a client's configuration for one agent (MCP
// server, and for Claude Code its hooks), through the client's own CLI where it can say it all,
// else by merging the client's config file. `setup --check` reports each client ok/missing/drifted.
import type { Command } from 'commander';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { CliError } from './cli-error.ts';
import { printJson } from './output.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { defaultHome } from '../host/core/identity.ts';
import { NAME_RE } from '../protocol/names.ts';
import { ConfigFileError, writeText } from '../setup/config-files.ts';
import {
  CLAUDE_PERMISSION,
  checkAllClients,
  CLIENTS,
  OPEN_WORLD_TOOLS,
  planSetup,
  type ClientCheck,
  type ClientName,
  type Scope,
  type Step,
} from '../setup/clients.ts';
import { thisLaunch } from '../setup/launch.ts';

/** Longest a client CLI run by setup (`claude mcp add`) may take. */
export const CLIENT_CLI_TIMEOUT_MS = 60_000;

interface SetupOptions {
  agent?: string;
  scope?: string;
  dryRun?: boolean;
  remove?: boolean;
  yes?: boolean;
  check?: boolean;
  json?: boolean;
}

/** The client's command on the PATH, as an absolute path. */
function onPath(command: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, command))) return join(dir, command);
  }
  return null;
}

function runStep(step: Step): void {
  if (step.kind === 'write') {
    writeText(step.path, step.text);
    return;
  }
  const [file, ...args] = step.argv;
  const r = spawnSync(file as string, args, { encoding: 'utf8', timeout: CLIENT_CLI_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.status !== 0) {
    const said = `${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n')[0] ?? '';
    throw new CliError(`\`${step.argv.slice(0, 3).join(' ')} …\` failed${r.error === undefined ? '' : ` (${r.error.message})`}: ${inLine(said)}`);
  }
}

function stepText(step: Step): string {
  return step.kind === 'run'
    ? `run ${step.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a}'`)).join(' ')}\n    (${step.summary})`
    : `write ${step.path}\n    (${step.summary})`;
}

/** What the user still has to allow, said after a setup without --yes. */
function notes(client: ClientName, yes: boolean, remove: boolean): string[] {
  if (yes || remove) return [];
  if (client === 'claude')
    return [
      `headless \`claude -p\` asks before calling the mail tools: run setup again with --yes to allow ${CLAUDE_PERMISSION} in settings, or pass --allowedTools ${CLAUDE_PERMISSION}`,
    ];
  if (client === 'codex')
    return [`\`codex exec\` refuses ${OPEN_WORLD_TOOLS.join(', ')} (they reach other agents) unless approved: run setup again with --yes to approve them`];
  return [];
}

function checkLine(c: ClientCheck): string {
  const head = `${c.state.padEnd(7)} ${c.client} (${c.scope})`;
  if (c.state === 'ok') return `${head}: agent ${c.agent ?? '?'} (${c.path})`;
  if (c.state === 'missing') return `${head}: not set up; fix: ${c.fix ?? ''}`;
  return `${head}: ${c.problems.map(inLine).join('; ')}; fix: ${c.fix ?? ''}`;
}

function parseScope(value: string | undefined): Scope {
  if (value === undefined || value === 'user' || value === 'project') return value ?? 'user';
  throw new CliError(`bad --scope "${inLine(value)}": user or project`, 'USAGE');
}

function parseClient(value: string | undefined): ClientName | undefined {
  if (value === undefined || (CLIENTS as readonly string[]).includes(value)) return value as ClientName | undefined;
  throw new CliError(`unknown client "${inLine(value)}": one of ${CLIENTS.join(', ')}`, 'USAGE');
}

function check(client: ClientName | undefined, opts: SetupOptions): void {
  const checks = checkAllClients(process.cwd(), process.env, opts.agent ?? null, client);
  if (opts.json === true) printJson({ clients: checks });
  else for (const c of checks) process.stdout.write(`${checkLine(c)}\n`);
  // a client asked for by name must be set up in one scope at least
  const namedMissing = client !== undefined && checks.every((c) => c.state === 'missing');
  if (checks.some((c) => c.state === 'drifted') || namedMissing) throw new CliError('a client needs setup again (see the fix above)', 'FAILURE', true);
}

function setup(client: ClientName, opts: SetupOptions): void {
  const agent = opts.agent ?? process.env['MBX_AGENT'];
  if (agent === undefined || agent === '') throw new CliError('no agent: give --agent NAME or set MBX_AGENT', 'USAGE');
  if (!NAME_RE.test(agent)) throw new CliError(`bad agent name "${inLine(agent)}": lowercase letters, digits and -, 2 to 40`, 'USAGE');
  const home = defaultHome();
  if (!existsSync(join(home, 'config.json'))) throw new CliError(`no host in ${home}: run \`agentmbx init\` first (or set MBX_HOME)`, 'NOT_FOUND');
  const scope = parseScope(opts.scope);
  const remove = opts.remove === true;
  const claude = client === 'claude' ? onPath('claude') : null;
  if (client === 'claude' && claude === null && opts.dryRun !== true) {
    throw new CliError('claude is not on the PATH: install Claude Code, or see docs/agents.md to add the server by hand', 'NOT_FOUND');
  }
  const req = { launch: thisLaunch(home), agent, scope, cwd: process.cwd(), env: process.env, yes: opts.yes === true };
  let steps: Step[];
  try {
    steps = planSetup(client, req, remove, claude ?? 'claude');
  } catch (err) {
    if (err instanceof ConfigFileError) throw new CliError(err.message, 'FAILURE');
    throw err;
  }
  const said = notes(client, req.yes, remove);
  if (opts.dryRun !== true) for (const step of steps) runStep(step);
  if (opts.json === true) {
    printJson({
      client,
      agent,
      scope,
      removed: remove,
      dry_run: opts.dryRun === true,
      changed: steps.length > 0,
      steps: steps.map((s) => (s.kind === 'run' ? { run: s.argv, summary: s.summary } : { write: s.path, summary: s.summary })),
      notes: said,
    });
    return;
  }
  const verb = opts.dryRun === true ? 'would' : 'did';
  if (steps.length === 0) process.stdout.write(`${client} (${scope}): ${remove ? 'nothing of agentmbx to remove' : `already set up for ${agent}`}\n`);
  else process.stdout.write(`${client} (${scope}), ${verb}:\n${steps.map((s) => `  ${stepText(s)}`).join('\n')}\n`);
  if (opts.dryRun === true) for (const s of steps) if (s.kind === 'write') process.stdout.write(`--- ${s.path} would read:\n${s.text}`);
  for (const note of said) process.stdout.write(`note: ${note}\n`);
}

export function registerSetupCommand(program: Command): void {
  program
    .command('setup')
    .description(`configure an agent client for one agent (${CLIENTS.join(', ')}), or --check them all`)
    .argument('[client]', CLIENTS.join(' | '))
    .option('--agent <name>', "the agent the client's sessions are (default: $MBX_AGENT)")
    .option('--scope <scope>', 'user (default: every session of this user) or project (this folder)')
    .option('--dry-run', 'print what would change, change nothing')
    .option('--remove', 'undo: remove what setup wrote')
    .option('--yes', `also allow what runs without asking: Claude Code's ${CLAUDE_PERMISSION} permission, Codex's approval of ${OPEN_WORLD_TOOLS.join(', ')}`)
    .option('--check', 'report each client ok / missing / drifted, with the command that fixes it')
    .option('--json', 'print JSON')
    .action((clientArg: string | undefined, opts: SetupOptions) => {
      const client = parseClient(clientArg);
      if (opts.check === true) {
        check(client, opts);
        return;
      }
      if (client === undefined) throw new CliError(`which client? agentmbx setup <${CLIENTS.join('|')}> --agent NAME, or setup --check`, 'USAGE');
      setup(client, opts);
    });
}
