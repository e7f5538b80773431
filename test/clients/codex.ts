// Runs the real Codex (`codex`) with an isolated CODEX_HOME whose model provider is a scripted
// Responses API on 127.0.0.1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnProcess, tempDir } from '../helpers/processes.ts';
import { CODEX } from './binaries.ts';
import { CLIENT_RUN_TIMEOUT_MS, type ClientRun } from './claude.ts';
import type { ScriptedModel } from './scripted-model.ts';

export interface CodexHome {
  /** the user's HOME (and the working folder of the runs) */
  home: string;
  /** CODEX_HOME: config.toml, sessions */
  codexHome: string;
  env: NodeJS.ProcessEnv;
}

/** The provider table and the settings that keep Codex on the scripted model (config.toml text). */
function providerConfig(model: ScriptedModel): string {
  return [
    'model = "scripted-model"',
    'model_provider = "scripted"',
    '',
    '[model_providers.scripted]',
    'name = "scripted"',
    `base_url = "${model.url}/v1"`,
    'env_key = "SCRIPTED_API_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n');
}

/** A fresh home for Codex that talks only to `model`. */
export function codexHome(model: ScriptedModel): CodexHome {
  const home = tempDir('mbx-codex-');
  const codexHomeDir = join(home, '.codex');
  mkdirSync(codexHomeDir);
  writeFileSync(join(codexHomeDir, 'config.toml'), providerConfig(model));
  return {
    home,
    codexHome: codexHomeDir,
    env: { PATH: process.env['PATH'] ?? '', HOME: home, CODEX_HOME: codexHomeDir, SCRIPTED_API_KEY: 'sk-test', RUST_LOG: 'error' },
  };
}

/** Runs `codex <args>` to completion in the home. */
export async function runCodex(at: CodexHome, args: string[]): Promise<ClientRun> {
  const child = spawnProcess([CODEX.path, ...args], { env: at.env, cwd: at.home, stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill(), CLIENT_RUN_TIMEOUT_MS);
  const code = await child.exited;
  clearTimeout(timer);
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}
