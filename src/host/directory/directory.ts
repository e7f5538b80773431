// The agent directory between hosts (protocol §5, GET /v1/agents): this host's own agents as a peer
// sees them, a peer's answer read as hostile input, and the whole list an agent sees (mbx_agents,
// `agentmbx agents --all`): agents here, then agents of paired hosts, listed by their host's
// directory or seen in mail.
import { sha256Hex } from '../../protocol/hash.ts';
import { canonicalJson } from '../../protocol/canonical.ts';
import { NAME_RE } from '../../protocol/names.ts';
import { hasControlCharacters, isPlainObject } from '../../protocol/validate.ts';
import { isoTime, localAddress, type HostNode } from '../core/node.ts';
import type { NewPeerAgent } from '../store/peer-links-table.ts';

/** Most agents a directory lists (served, and kept per peer: the rest of a longer one is dropped). */
export const DIRECTORY_AGENTS_MAX = 500;
/** Longest description kept from a peer's directory (longer ones are cut). */
export const DIRECTORY_DESCRIPTION_MAX_CHARS = 500;
/** Longest role or client name kept from a peer's directory (longer ones are dropped). */
export const DIRECTORY_LABEL_MAX_CHARS = 64;
/** Most entries one listing (mbx_agents, agents --all) holds. */
export const DIRECTORY_LIST_MAX = 1000;

/** One agent as a directory lists it (protocol §5). */
export interface DirectoryAgent {
  name: string;
  role: string | null;
  /** the client the agent runs in (claude-code, codex…) when known */
  cli: string | null;
  description: string | null;
  /** when it last sent mail (ISO 8601), or null */
  last_seen: string | null;
}

/** The answer to GET /v1/agents. */
export interface DirectoryAnswer {
  host: string;
  agents: DirectoryAgent[];
}

/** This host's own agents (the owner's mailbox is no agent), at most DIRECTORY_AGENTS_MAX. */
export function ownDirectory(node: HostNode): DirectoryAnswer {
  const { store } = node;
  const agents = store.peerLinks.ownAgents(DIRECTORY_AGENTS_MAX).map((a) => ({
    name: a.name,
    role: a.role,
    cli: a.cli,
    description: a.description,
    last_seen: store.agentMail.lastSent(localAddress(node, a.name)),
  }));
  return { host: node.config.host, agents };
}

/** A hash of what a directory says apart from last_seen: a change of it is worth telling peers at once. */
export function directoryDigest(agents: readonly Omit<DirectoryAgent, 'last_seen'>[]): string {
  const sorted = [...agents].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return sha256Hex(canonicalJson(sorted.map((a) => [a.name, a.role, a.cli, a.description])));
}

/** A short label (role, client) from hostile input: kept when it is a short string without control characters. */
export function shortLabel(x: unknown): string | null {
  return typeof x === 'string' && x.length > 0 && x.length <= DIRECTORY_LABEL_MAX_CHARS && !hasControlCharacters(x) ? x : null;
}

function description(x: unknown): string | null {
  if (typeof x !== 'string' || x.length === 0) return null;
  return x.slice(0, DIRECTORY_DESCRIPTION_MAX_CHARS).replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, ' ');
}

/** A time a peer wrote (ISO text or milliseconds) as ISO, or null. */
function seenAt(x: unknown): string | null {
  const ms = typeof x === 'number' ? x : typeof x === 'string' && x.length <= 40 ? Date.parse(x) : NaN;
  if (!Number.isFinite(ms)) return null;
  try {
    return isoTime(ms);
  } catch {
    return null;
  }
}

/**
 * A peer's directory answer, read as hostile input: null unless it is a directory of `host`;
 * entries without a valid name are skipped, a name listed twice counts once, bad optional fields
 * become null, and at most DIRECTORY_AGENTS_MAX entries are kept.
 */
export function readDirectory(body: unknown, host: string): NewPeerAgent[] | null {
  if (!isPlainObject(body) || body.host !== host || !Array.isArray(body.agents)) return null;
  const seen = new Set<string>();
  const agents: NewPeerAgent[] = [];
  for (const entry of body.agents as unknown[]) {
    if (agents.length >= DIRECTORY_AGENTS_MAX) break;
    if (!isPlainObject(entry) || typeof entry.name !== 'string' || !NAME_RE.test(entry.name) || seen.has(entry.name)) continue;
    seen.add(entry.name);
    agents.push({
      name: entry.name,
      role: shortLabel(entry.role),
      cli: shortLabel(entry.cli),
      description: description(entry.description),
      last_seen: seenAt(entry.last_seen),
    });
  }
  return agents;
}

/** An agent an agent can write to, as mbx_agents and `agents --all` list it. */
export interface DirectoryEntry {
  address: string;
  host: string;
  /** 'here': a mailbox on this host; 'peer': an agent of a paired host (its directory lists it, or mail came from it) */
  where: 'here' | 'peer';
  role: string | null;
  cli: string | null;
  description: string | null;
  /** when it last sent mail (ISO): for a peer's agent, its host's directory or the mail stored here, whichever is later */
  last_seen: string | null;
}

function later(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** The agents of this host, then the agents of paired hosts (listed by their directories or seen in mail), by host and name. */
export function directory(node: HostNode): DirectoryEntry[] {
  const { store } = node;
  const here: DirectoryEntry[] = ownDirectory(node).agents.map((a) => ({
    address: localAddress(node, a.name),
    host: node.config.host,
    where: 'here',
    role: a.role,
    cli: a.cli,
    description: a.description,
    last_seen: a.last_seen,
  }));
  const peers = new Map<string, DirectoryEntry>();
  for (const a of store.peerLinks.peerAgents(DIRECTORY_LIST_MAX)) {
    const address = `${a.name}@${a.host}`;
    peers.set(address, { address, host: a.host, where: 'peer', role: a.role, cli: a.cli, description: a.description, last_seen: a.last_seen });
  }
  for (const s of store.agentMail.sendersSeen(DIRECTORY_LIST_MAX)) {
    const known = peers.get(s.address);
    if (known !== undefined) known.last_seen = later(known.last_seen, s.last_seen);
    else peers.set(s.address, { address: s.address, host: s.host, where: 'peer', role: null, cli: null, description: null, last_seen: s.last_seen });
  }
  const others = [...peers.values()].sort((a, b) => a.host.localeCompare(b.host) || a.address.localeCompare(b.address));
  return [...here, ...others].slice(0, DIRECTORY_LIST_MAX);
}

/** One entry as a line of text (mbx_agents, `agents --all`): address, where, role, client, last seen, description. */
export function directoryLine(a: DirectoryEntry): string {
  return (
    `${a.address}  ${a.where}${a.role === null ? '' : `  role:${a.role}`}${a.cli === null ? '' : `  cli:${a.cli}`}` +
    `  last seen ${a.last_seen ?? 'never'}${a.description === null ? '' : `  ${a.description}`}`
  );
}
