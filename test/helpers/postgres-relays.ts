// Relay processes (`agentmbx relay serve --store postgres://…`) sharing one PostgreSQL database, as
// several machines would: one relay key (MBX_RELAY_KEY), a store directory each (which then holds
// nothing of the store), one database.
import { generateSigningKey } from '../../src/protocol/keys.ts';
import { tempDir } from './processes.ts';
import { spawnRelay, type RelayProcess } from './relay-process.ts';

export interface RelayGroup {
  relays: RelayProcess[];
  /** the key every relay of the group signs with (MBX_RELAY_KEY) */
  keySeed: string;
  /** starts one more relay process of the group, optionally with MBX_FAILPOINT armed */
  spawn(failpoint?: string): Promise<RelayProcess>;
}

export async function spawnPostgresRelays(url: string, count: number): Promise<RelayGroup> {
  const keySeed = generateSigningKey().exportSeed();
  const spawn = (failpoint?: string): Promise<RelayProcess> =>
    spawnRelay(tempDir('agentmbx-pg-relay-'), {
      env: { MBX_RELAY_KEY: keySeed },
      args: ['--store', url, '--workers', '1'],
      ...(failpoint === undefined ? {} : { failpoint }),
    });
  const relays: RelayProcess[] = [];
  // one after the other: the first creates the schema (the others would wait on its lock anyway)
  for (let i = 0; i < count; i += 1) relays.push(await spawn());
  return { relays, keySeed, spawn };
}
