import type { Command } from 'commander';

/** Host commands (init, pair, send, inbox, daemon, doctor…): registered by the host's CLI files. */
export function registerHostCommands(_program: Command): void {}
