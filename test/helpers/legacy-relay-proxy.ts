// An HTTP proxy in front of a real relay that makes it look like a relay predating signed v2
// enc-key ads (the upstream 0.5.x relay): `POST /v2/relay/enc-key` gets `404 {"error":"not found"}`,
// enc-key lookups lose `ad`/`ad_sig`, info's `you` loses `enc_ad` and its limits lose `max_wait_s`
// (it holds no pulls). Everything else passes byte for byte.
import { after } from 'node:test';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';

export interface LegacyRelayProxy {
  url: string;
  /** v2 enc-key ads answered with 404 */
  v2AdPosts: number;
  /** v1 enc-key ads passed on to the relay (or answered `v1Status`) */
  v1AdPosts: number;
  /** when set, v1 enc-key ads are answered with this status (a relay that retired them: 404 or 410) */
  v1Status: number | null;
}

async function bodyOf(stream: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Drops `names` from the JSON object at `path` of a JSON answer; other answers stay as they are. */
function withoutMembers(raw: Buffer, path: string[], names: string[]): Buffer {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return raw;
  }
  let target = json;
  for (const step of path) target = typeof target === 'object' && target !== null ? (target as Record<string, unknown>)[step] : undefined;
  if (typeof target !== 'object' || target === null) return raw;
  for (const name of names) delete (target as Record<string, unknown>)[name];
  return Buffer.from(JSON.stringify(json));
}

/** How the answer to `method path` is rewritten, or null to pass it on unchanged. */
function rewriteFor(method: string, path: string, keepInfo: boolean): ((raw: Buffer) => Buffer) | null {
  if (method === 'GET' && path === '/v2/relay/info') {
    const withoutWait = (raw: Buffer): Buffer => withoutMembers(raw, ['limits'], ['max_wait_s']);
    return keepInfo ? withoutWait : (raw) => withoutMembers(withoutWait(raw), ['you'], ['enc_ad']);
  }
  if (method === 'GET' && (path === '/v2/relay/enc-key' || path === '/v1/relay/enc-key')) return (raw) => withoutMembers(raw, [], ['ad', 'ad_sig']);
  return null;
}

/**
 * `keepInfo`: info's `you` keeps its `enc_ad` member (a relay that knows v2 ads yet answers 404 to
 * one, as a hostile relay could, to push hosts down to the v1 ad).
 */
export async function startLegacyRelayProxy(relayUrl: string, keepInfo = false): Promise<LegacyRelayProxy> {
  const upstream = new URL(relayUrl);
  const proxy: LegacyRelayProxy = { url: '', v2AdPosts: 0, v1AdPosts: 0, v1Status: null };
  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://proxy').pathname;
    const body = await bodyOf(req);
    if (method === 'POST' && path === '/v2/relay/enc-key') {
      proxy.v2AdPosts += 1;
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found' }));
      return;
    }
    if (method === 'POST' && path === '/v1/relay/enc-key') {
      proxy.v1AdPosts += 1;
      if (proxy.v1Status !== null) {
        res.writeHead(proxy.v1Status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'v1 enc-key ads are retired here' }));
        return;
      }
    }
    const answer = await new Promise<IncomingMessage>((resolve, reject) => {
      const out = httpRequest({ host: upstream.hostname, port: upstream.port, method, path: req.url, headers: req.headers, agent: false }, resolve);
      out.on('error', reject);
      out.end(body);
    });
    const rewrite = rewriteFor(method, path, keepInfo);
    if (rewrite === null) {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      return;
    }
    const rewritten = rewrite(await bodyOf(answer));
    const headers = { ...answer.headers, 'content-length': String(rewritten.length) };
    delete headers['transfer-encoding'];
    res.writeHead(answer.statusCode ?? 502, headers).end(rewritten);
  };
  const server = createServer((req, res) => {
    forward(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `proxy: ${String(err)}` }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('proxy did not bind');
  proxy.url = `http://127.0.0.1:${address.port}`;
  after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return proxy;
}
