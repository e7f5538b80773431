import type { Command } from 'commander';

/** `agentmbx relay backup|restore|rotate-epoch|log`: the operator's recovery tools. */
export function registerRelayOpsCommands(_relay: Command): void {}
