// Hosts on a hosted relay (enrolment_authority "account-token") for the token-command tests: a
// local token issuer, a mint endpoint standing in for the accounts service, and a token command
// (a tiny node script) that asks it for a token bound to the cloud key the host passes in its env.
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after } from 'node:test';
import { generateSigningKey } from '../../../src/protocol/keys.ts';
import { cloudKeyJwk, cloudKeyThumbprint } from '../../../src/protocol/records/cloud-key.ts';
import type { HostNode } from '../../../src/host/core/node.ts';
import { setRelay } from '../../../src/host/relay-client/pin.ts';
import type { Enrolment } from '../../../src/relay/store/relay-store.ts';
import { tempDir } from '../../helpers/processes.ts';
import type { TestRelay } from '../../helpers/relay-fixture.ts';
import { ISSUER, startTokenIssuer, type TokenIssuer } from '../../helpers/token-issuer.ts';
import { relayWorld, type RelayWorld } from './relay-fixtures.ts';
import { TestClock } from '../../helpers/clock.ts';

export const AUDIENCE = 'https://relay.test.example';

/** The env one run of the token command was given (AGENTMBX_*). */
export interface CommandEnv {
  relay: string;
  host: string;
  fp: string;
  jkt: string;
  key: string;
}

export interface MintServer {
  url: string;
  /** `<node> <script> <url>`: a token command asking this server */
  command: string;
  /** runs per host name */
  runs: Map<string, number>;
  /** the env of the latest run per host name */
  env: Map<string, CommandEnv>;
  /** 'other-jkt': tokens bound to a cloud key nobody holds (the relay refuses them) */
  mode: 'ok' | 'other-jkt';
  /** the account each host's tokens name (default acct-1) */
  accounts: Map<string, string>;
  /** every token served (to check that none shows up in any output) */
  tokens: string[];
}

const CLIENT = `
const query = new URLSearchParams({
  relay: process.env.AGENTMBX_RELAY_URL ?? '', host: process.env.AGENTMBX_HOST ?? '', fp: process.env.AGENTMBX_HOST_FP ?? '',
  jkt: process.env.AGENTMBX_CLOUD_JKT ?? '', key: process.env.AGENTMBX_CLOUD_KEY ?? '',
});
const answer = await fetch(process.argv[2] + '?' + query.toString());
const text = await answer.text();
if (!answer.ok) {
  process.stderr.write('mint refused: ' + text + '\\n');
  process.exit(1);
}
process.stdout.write(text + '\\n');
`;

/** A mint endpoint minting, with `issuer`, a 10-minute token for the cloud key the command passes. */
export async function startMintServer(issuer: TokenIssuer): Promise<MintServer> {
  const otherJkt = await cloudKeyThumbprint(cloudKeyJwk(generateSigningKey().publicKey));
  const mint: MintServer = { url: '', command: '', runs: new Map(), env: new Map(), mode: 'ok', accounts: new Map(), tokens: [] };
  const server = createServer((request, response) => {
    const q = new URL(request.url ?? '/', 'http://x').searchParams;
    const env: CommandEnv = { relay: q.get('relay') ?? '', host: q.get('host') ?? '', fp: q.get('fp') ?? '', jkt: q.get('jkt') ?? '', key: q.get('key') ?? '' };
    mint.runs.set(env.host, (mint.runs.get(env.host) ?? 0) + 1);
    mint.env.set(env.host, env);
    const account = mint.accounts.get(env.host) ?? 'acct-1';
    const jkt = mint.mode === 'other-jkt' ? otherJkt : env.jkt;
    issuer
      .mint(AUDIENCE, { sub: `${account}-${env.host}`, account, client_id: `client-${env.host}`, cnf: { jkt } })
      .then((token) => {
        mint.tokens.push(token);
        response.writeHead(200, { 'content-type': 'text/plain' }).end(token);
      })
      .catch((err: unknown) => response.writeHead(500).end(String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  mint.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mint`;
  const script = join(tempDir('mbx-mint-'), 'mint-client.mjs');
  writeFileSync(script, CLIENT);
  mint.command = `'${process.execPath}' '${script}' '${mint.url}'`;
  return mint;
}

/** The relay config of a hosted relay trusting `issuer`. */
export function hostedConfig(issuer: TokenIssuer) {
  return { account_token: { token_issuer: ISSUER, token_jwks_url: issuer.jwksUrl, token_audience: AUDIENCE } };
}

export interface HostedWorld extends RelayWorld {
  issuer: TokenIssuer;
  mint: MintServer;
}

/** relayWorld on a hosted relay, both hosts with the mint server's token command. */
export async function hostedWorld(): Promise<HostedWorld> {
  const clock = new TestClock(Date.now());
  const issuer = await startTokenIssuer(clock.nowMs);
  const mint = await startMintServer(issuer);
  const world = await relayWorld({ config: hostedConfig(issuer) }, clock);
  for (const host of [world.a, world.b]) await setRelay(host.node, world.relay.url, undefined, mint.command);
  return { ...world, issuer, mint };
}

/** The relay's enrolment of `node`'s current key. */
export async function enrolmentOf(relay: TestRelay, node: HostNode): Promise<Enrolment | null> {
  return relay.service.core.context.store.read((tx) => tx.enrolments.get(node.keys.hostKey.publicKey));
}
