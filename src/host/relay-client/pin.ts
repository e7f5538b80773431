// Pointing a host at a relay (design §1): fetch its info, show its fingerprint, pin its key (trust on
// first use, or exactly the key the owner typed). A relay that changes its key is not re-pinned
// silently: the owner confirms the new key with --key. A hosted relay also gets the owner's token
// command, kept with the pin.
import { fingerprint, parseFingerprintInput } from '../../protocol/fingerprint.ts';
import { readInfoAnswer } from '../../protocol/relay-api/info.ts';
import { HostError } from '../core/host-error.ts';
import type { HostNode } from '../core/node.ts';
import { normalizeAddr } from '../core/peer-addr.ts';
import { cloudKeyOf } from './access.ts';
import type { RelayAnswer } from './api.ts';
import { relayApiFor } from './session.ts';

/** A relay pin refused; kind `invalid` marks input the owner must retype. */
export class RelayPinError extends HostError {}

/** Longest token command kept. */
export const TOKEN_COMMAND_MAX_CHARS = 4096;

export interface PinnedRelay {
  url: string;
  relay_pubkey: string;
  fingerprint: string;
  epoch: string;
  /** no --key: the key was trusted as first seen */
  tofu: boolean;
  /** a token command is set (the command itself is not shown) */
  token_command: boolean;
}

/**
 * Pins the relay at `urlText`. `tokenCommand`: a command to set, null to remove it, undefined to keep
 * the one stored for this same URL (another URL starts without one).
 */
export async function setRelay(node: HostNode, urlText: string, keyInput?: string, tokenCommand?: string | null): Promise<PinnedRelay> {
  if (typeof tokenCommand === 'string' && (tokenCommand.trim() === '' || tokenCommand.length > TOKEN_COMMAND_MAX_CHARS || tokenCommand.includes('\0'))) {
    throw new RelayPinError(`the token command must be 1 to ${TOKEN_COMMAND_MAX_CHARS} characters, without NUL`, 'invalid');
  }
  const wanted = keyInput === undefined ? null : parseFingerprintInput(keyInput);
  if (keyInput !== undefined && wanted === null) {
    throw new RelayPinError(`bad fingerprint "${keyInput}": use 16 hex digits (dashes optional) or the base64 key`, 'invalid');
  }
  let url: string;
  try {
    url = normalizeAddr(urlText);
  } catch (err) {
    throw new RelayPinError(err instanceof Error ? err.message : String(err), 'invalid');
  }
  let answer: RelayAnswer;
  try {
    answer = await relayApiFor(node, url).call('GET', '/v2/relay/info', undefined, false);
  } catch (err) {
    // the cause alone (ECONNREFUSED…), not a second "cannot reach <url>"
    const cause = (err instanceof Error ? err.message : String(err)).replace(/^cannot reach \S+: /, '');
    throw new RelayPinError(`cannot reach the relay at ${url}: ${cause}`, 'unreachable');
  }
  const reply = readInfoAnswer(answer);
  if (!reply.ok) throw new RelayPinError(`${url} does not answer as a v2 relay (HTTP ${answer.status}): not an agentmbx relay, or an old one`, 'unreachable');
  const { relay_pubkey: key, epoch } = reply.value;
  const fp = fingerprint(key);
  if (wanted !== null && wanted !== fp) throw new RelayPinError(`the relay at ${url} presents key ${fp}, not ${wanted}: not pinned`);
  const current = node.store.relay.get();
  if (wanted === null && current !== undefined && current.url === url && current.relay_pubkey !== key) {
    throw new RelayPinError(
      `the relay at ${url} changed its key from ${fingerprint(current.relay_pubkey)} to ${fp}: ` +
        `if that is expected, confirm with agentmbx relay set ${url} --key ${fp}`,
    );
  }
  // the cloud key exists before any command is stored, so a running daemon does not race us to make it
  if (typeof tokenCommand === 'string') await cloudKeyOf(node);
  node.store.transaction(() => {
    if (current?.url !== url || current.relay_pubkey !== key || current.seen_pubkey !== null) {
      node.store.relay.pin(url, key, node.nowMs());
      // another relay may take what this one refused for good
      if (current?.url !== url || current.relay_pubkey !== key) node.store.outbox.clearRelayRefusals();
    }
    if (tokenCommand !== undefined) node.store.relay.setTokenCommand(tokenCommand);
  });
  const hasCommand = (node.store.relay.get()?.token_command ?? null) !== null;
  return { url, relay_pubkey: key, fingerprint: fp, epoch, tofu: wanted === null, token_command: hasCommand };
}

export function unsetRelay(node: HostNode): boolean {
  return node.store.relay.unset();
}
