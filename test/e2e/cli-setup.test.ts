// `agentmbx setup` on the config files of clients that need no binary to set up (Codex, Cursor,
// Gemini; Claude Code's settings): other entries kept byte for byte, idempotent, --dry-run writes
// nothing, --remove undoes, --yes alone allows, and --check / doctor name drift with the fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { runCli, tempDir } from '../helpers/processes.ts';
import { E2E_TIMEOUT_MS, newCliHost } from './host-helpers.ts';

const USER_TOML = `# my settings
model = "o4"

[mcp_servers.other]   # keep me
command = "other-server"
args = ["--x"]

[profiles.fast]
model = "o4-mini"
`;

/** TOML as plain JSON values (the parser's tables have no prototype). */
function parse(text: string): unknown {
  return JSON.parse(JSON.stringify(parseToml(text)));
}

async function setupEnv(): Promise<{ env: NodeJS.ProcessEnv; home: string }> {
  const host = await newCliHost('alpha', []);
  const home = tempDir('mbx-setup-');
  // PATH without any client binary: these clients are set up by file
  return { home, env: { ...host.env, HOME: home, CODEX_HOME: join(home, '.codex'), PATH: '/usr/bin:/bin', CLAUDE_CONFIG_DIR: undefined } };
}

async function setup(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number | string; stdout: string; stderr: string }> {
  return runCli(['setup', ...args], env);
}

test('setup codex merges its table into config.toml, keeps the rest, is idempotent and undoes', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { env, home } = await setupEnv();
  const path = join(home, '.codex', 'config.toml');
  mkdirSync(join(home, '.codex'));
  writeFileSync(path, USER_TOML);

  const dry = await setup(env, ['codex', '--agent', 'desk', '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /would:/);
  assert.equal(readFileSync(path, 'utf8'), USER_TOML, '--dry-run writes nothing');

  const first = await setup(env, ['codex', '--agent', 'desk']);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /note: `codex exec` refuses mbx_send .* --yes/);
  const text = readFileSync(path, 'utf8');
  assert.ok(text.startsWith(USER_TOML), "the user's text, comments and all, is kept as written");
  const entry = (parse(text) as { mcp_servers: Record<string, Record<string, unknown>> }).mcp_servers['agentmbx'] as Record<string, unknown>;
  assert.equal(entry['command'], process.execPath, 'the absolute path of this Node');
  assert.deepEqual((entry['args'] as string[]).slice(-3), ['mcp', '--agent', 'desk']);
  assert.equal(entry['required'], true);
  assert.equal(entry['tool_timeout_sec'], 660);
  assert.deepEqual(entry['env'], { MBX_HOME: env.MBX_HOME });
  assert.equal(entry['tools'], undefined, 'no approval without --yes');

  const again = await setup(env, ['codex', '--agent', 'desk']);
  assert.match(again.stdout, /already set up for desk/);
  assert.equal(readFileSync(path, 'utf8'), text, 'a second run changes nothing');

  await setup(env, ['codex', '--agent', 'desk', '--yes']);
  const approved = parse(readFileSync(path, 'utf8')) as { mcp_servers: { agentmbx: { tools: Record<string, unknown> } } };
  assert.deepEqual(approved.mcp_servers.agentmbx.tools, { mbx_send: { approval_mode: 'approve' } });

  const check = await setup(env, ['--check', '--json']);
  const codex = (JSON.parse(check.stdout) as { clients: Array<{ client: string; scope: string; state: string }> }).clients.find((c) => c.client === 'codex');
  assert.equal(codex?.state, 'ok');

  const removed = await setup(env, ['codex', '--agent', 'desk', '--remove']);
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal(readFileSync(path, 'utf8'), USER_TOML, '--remove leaves the file as the user had it');
});

test('setup cursor and gemini merge mcpServers; --check and doctor report drift with the fix', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { env, home } = await setupEnv();
  const cursor = join(home, '.cursor', 'mcp.json');
  mkdirSync(join(home, '.cursor'));
  writeFileSync(cursor, JSON.stringify({ mcpServers: { other: { command: 'x' } }, keep: 1 }));
  assert.equal((await setup(env, ['cursor', '--agent', 'desk'])).code, 0);
  assert.equal((await setup(env, ['gemini', '--agent', 'desk'])).code, 0);
  const doc = JSON.parse(readFileSync(cursor, 'utf8')) as {
    mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
    keep: number;
  };
  assert.deepEqual(doc.mcpServers['other'], { command: 'x' });
  assert.equal(doc.keep, 1);
  assert.equal(doc.mcpServers['agentmbx']?.command, process.execPath);
  assert.ok(existsSync(join(home, '.gemini', 'settings.json')));

  // drift: another agent name in the entry, a path that no longer exists
  doc.mcpServers['agentmbx'] = {
    ...(doc.mcpServers['agentmbx'] as { command: string; args: string[]; env: Record<string, string> }),
    command: '/nowhere/node',
  };
  writeFileSync(cursor, JSON.stringify(doc));
  const check = await setup(env, ['--check', '--agent', 'desk']);
  assert.equal(check.code, 1, 'a drifted client fails the check');
  assert.match(check.stdout, /^drifted cursor \(user\): its command \/nowhere\/node does not exist; fix: agentmbx setup cursor --agent desk$/m);
  assert.match(check.stdout, /^ok {6}gemini \(user\): agent desk/m);
  const other = await setup(env, ['--check', '--agent', 'laptop']);
  assert.match(other.stdout, /gemini \(user\): it is agent desk, not laptop; fix: agentmbx setup gemini --agent laptop/);
  const doctor = await runCli(['doctor'], env);
  assert.match(doctor.stdout, /WARN {2}client cursor \(user\): drifted: its command \/nowhere\/node does not exist \(agentmbx setup cursor --agent desk\)/);
  assert.match(doctor.stdout, /ok {4}client gemini \(user\): agentmbx set up for agent desk/);

  assert.equal((await setup(env, ['cursor', '--agent', 'desk'])).code, 0, 'the fix');
  assert.equal((await setup(env, ['--check', '--agent', 'desk'])).code, 0);
});

test('setup claude without the claude CLI, and bad input, are one-line refusals that change nothing', { timeout: E2E_TIMEOUT_MS }, async () => {
  const { env, home } = await setupEnv();
  const noClaude = await setup(env, ['claude', '--agent', 'desk']);
  assert.equal(noClaude.code, 3);
  assert.match(noClaude.stderr, /^agentmbx: claude is not on the PATH: .+\n$/);
  assert.equal((await setup(env, ['vim', '--agent', 'desk'])).code, 2);
  assert.equal((await setup(env, ['codex', '--agent', 'Bad Name'])).code, 2);
  assert.equal((await setup(env, ['codex'])).code, 2);
  mkdirSync(join(home, '.codex'));
  writeFileSync(join(home, '.codex', 'config.toml'), 'model = "unterminated\n');
  const broken = await setup(env, ['codex', '--agent', 'desk']);
  assert.equal(broken.code, 1);
  assert.match(broken.stderr, /^agentmbx: .*config\.toml is not valid TOML .*: fix it, then run setup again\n$/);
  assert.equal(readFileSync(join(home, '.codex', 'config.toml'), 'utf8'), 'model = "unterminated\n');
  const inline = 'mcp_servers = { agentmbx = { command = "x" } }\n';
  writeFileSync(join(home, '.codex', 'config.toml'), inline);
  const refused = await setup(env, ['codex', '--agent', 'desk']);
  assert.match(refused.stderr, /cannot edit safely/);
  assert.equal(readFileSync(join(home, '.codex', 'config.toml'), 'utf8'), inline);
});
