// Runs the real Claude Code (`claude`) in an isolated home against a scripted Messages API.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { spawnProcess, tempDir } from '../helpers/processes.ts';
import { CLAUDE } from './binaries.ts';
import type { ScriptedModel } from './scripted-model.ts';

/** Upper bound of one client run: a hang fails the run instead of the test file. */
export const CLIENT_RUN_TIMEOUT_MS = 90_000;

export interface ClientRun {
  code: number | string;
  stdout: string;
  stderr: string;
}

export interface ClaudeHome {
  /** the user's HOME (and the working folder of the runs) */
  home: string;
  /** where Claude Code keeps its settings and .claude.json (CLAUDE_CONFIG_DIR) */
  configDir: string;
  env: NodeJS.ProcessEnv;
}

/** A fresh home for Claude Code that talks only to `model` (API-key login, no other traffic). */
export function claudeHome(model: ScriptedModel, extraEnv: NodeJS.ProcessEnv = {}): ClaudeHome {
  const home = tempDir('mbx-claude-');
  const configDir = join(home, '.claude');
  mkdirSync(configDir);
  return {
    home,
    configDir,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: home,
      CLAUDE_CONFIG_DIR: configDir,
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: 'sk-ant-test',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      // `claude -p` starts its first turn once MCP servers connect, or after 5 s without them; an
      // agentmbx server on a loaded test machine can take longer to start, so wait for it
      MCP_CONNECTION_NONBLOCKING: '0',
      MCP_CONNECT_TIMEOUT_MS: '60000',
      ...extraEnv,
    },
  };
}

/** Runs `claude <args>` to completion in the home (stdin is empty: `-p` reads a piped stdin). */
export async function runClaude(at: ClaudeHome, args: string[]): Promise<ClientRun> {
  const child = spawnProcess([CLAUDE.path, ...args], { env: at.env, cwd: at.home, stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill(), CLIENT_RUN_TIMEOUT_MS);
  const code = await child.exited;
  clearTimeout(timer);
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}
