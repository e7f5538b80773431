// Addresses to destinations. Sending expands every address form to concrete hosts before anything
// leaves the machine; receiving picks this host's recipients out of an envelope's `to`.
import { parseAddress } from '../../protocol/records/envelope.ts';
import { HostError } from './host-error.ts';
import type { HostNode } from './node.ts';

/** The owner's own mailbox on every host: always there, never an agent row. */
export const OWNER = 'owner';
/** The host's system sender (alerts). */
export const SYSTEM_SENDER = 'mbx';
export const RESERVED_NAMES: readonly string[] = [OWNER, SYSTEM_SENDER];

export class RouteError extends HostError {}

export interface Route {
  /** the addresses as they go into the envelope: bare names and `owner` qualified with this host */
  to: string[];
  /** local mailboxes that get the message */
  localAgents: string[];
  /** paired hosts that get one sealed copy each */
  remoteHosts: string[];
}

/** Whether `name` is a mailbox on this host: the owner's, or an agent's. */
export function isMailboxHere(node: HostNode, name: string): boolean {
  return name === OWNER || node.store.mail.agent(name) !== undefined;
}

/** Expands `addresses` for a message from local agent `fromAgent`; throws RouteError on an unknown name or host. */
export function expandRoute(node: HostNode, fromAgent: string, addresses: readonly string[]): Route {
  const self = node.config.host;
  const to = new Set<string>();
  const local = new Set<string>();
  const remote = new Set<string>();
  const allPeers = (): void => {
    for (const p of node.store.peers.list()) remote.add(p.host);
  };
  for (const raw of addresses) {
    const a = parseAddress(raw);
    if (a === null) throw new RouteError(`bad address "${raw}": use name@host, name, role:<role>, * or owner`);
    if (a.kind === 'owner' || (a.kind === 'agent' && (a.host === undefined || a.host === self))) {
      const name = a.kind === 'owner' ? OWNER : a.name;
      if (!isMailboxHere(node, name)) throw new RouteError(`no agent "${name}" on this host (agentmbx agents add ${name})`, 'not-found');
      local.add(name);
      to.add(`${name}@${self}`);
    } else if (a.kind === 'agent' && a.host !== undefined) {
      if (node.store.peers.get(a.host) === undefined) throw new RouteError(`host "${a.host}" is not paired (agentmbx peers)`, 'not-paired');
      remote.add(a.host);
      to.add(raw);
    } else if (a.kind === 'role') {
      for (const agent of node.store.mail.agentsWithRole(a.role)) local.add(agent.name);
      allPeers();
      to.add(raw);
    } else {
      for (const agent of node.store.mail.agents()) if (agent.name !== fromAgent) local.add(agent.name);
      allPeers();
      to.add(raw);
    }
  }
  if (local.size === 0 && remote.size === 0) throw new RouteError('no recipient: nobody matches those addresses');
  return { to: [...to], localAgents: [...local].sort(), remoteHosts: [...remote].sort() };
}

export type RecipientsHere = { ok: true; agents: string[] } | { ok: false; reason: string };

/**
 * This host's mailboxes for an envelope's `to`. `name@thishost` must name a mailbox here; `role:`
 * and `*` match the agents here and fall back to the owner when none match, so mail never vanishes.
 */
export function recipientsHere(node: HostNode, to: readonly string[]): RecipientsHere {
  const self = node.config.host;
  const agents = new Set<string>();
  let broad = false;
  for (const raw of to) {
    const a = parseAddress(raw);
    if (a === null) continue;
    if (a.kind === 'agent' && a.host === self) {
      if (!isMailboxHere(node, a.name)) return { ok: false, reason: `unknown recipient ${raw}` };
      agents.add(a.name);
    } else if (a.kind === 'role') {
      broad = true;
      for (const agent of node.store.mail.agentsWithRole(a.role)) agents.add(agent.name);
    } else if (a.kind === 'all') {
      broad = true;
      for (const agent of node.store.mail.agents()) agents.add(agent.name);
    }
  }
  if (agents.size === 0 && broad) agents.add(OWNER);
  if (agents.size === 0) return { ok: false, reason: 'no recipient on this host' };
  return { ok: true, agents: [...agents].sort() };
}
