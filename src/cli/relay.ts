import type { Command } from 'commander';

/** `agentmbx relay …`: the operator's commands. */
export function registerRelayCommands(_program: Command): void {}
