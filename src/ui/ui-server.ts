// The owner's page server: node:http on 127.0.0.1 only, every request through the gate
// (ui-gate.ts), reads through owner-view.ts, writes through the host operations the CLI uses
// (sendMail from `owner`, retryRowNow, dismissQuarantined, the loop guard's resumeThread). Live: /events is a server-sent event
// stream that says "change" whenever the store's data_version moves (the daemon or a CLI committed)
// or this server wrote; the page's script then fetches its live part again.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { HostError, type FailureKind } from '../host/core/host-error.ts';
import type { HostNode } from '../host/core/node.ts';
import { dismissQuarantined, retryRowNow } from '../host/owner-actions.ts';
import { openMessage, ownerView, searchAll, type OwnerView } from '../host/owner-view.ts';
import { OWNER } from '../host/core/route.ts';
import { sendMail } from '../host/send.ts';
import { resumeThread } from '../host/wake/loop-guard.ts';
import { StoreError } from '../host/store/database.ts';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';
import { fullPage, livePart, type PageRequest } from './ui-page.ts';
import { loadUiSecret, UiGate, type Refusal } from './ui-gate.ts';

/** Largest form body taken: a whole mail body, escaped as a form encodes it (up to 3 bytes per byte), and the other fields. */
export const UI_FORM_MAX_BYTES = MAX_BODY_BYTES * 3 + 16_384;
/** Event streams open at once (tabs of the page); one more is refused. */
export const UI_EVENT_STREAMS_MAX = 16;
/** How often the store is looked at for changes while a stream is open. */
export const UI_WATCH_INTERVAL_MS = 250;
/** A comment line on every stream this often, so a closed tab is noticed. */
export const UI_HEARTBEAT_MS = 15_000;
/** The page's writes, each one host operation. */
const WRITES = ['/send', '/retry', '/dismiss', '/resume'];
/** Who lifted a loop guard trip, as the store records it (the CLI's says `agentmbx guard resume`). */
const RESUMED_BY = "the owner (the owner's page)";
/** Longest query string looked at. */
const QUERY_MAX_CHARS = 2048;

const ASSETS: Record<string, { type: string; body: Buffer }> = {
  '/assets/ui.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./assets/ui.css', import.meta.url)) },
  '/assets/ui.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./assets/ui.js', import.meta.url)) },
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with the page's own forms
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

const STATUS_OF_KIND: Record<FailureKind, number> = { invalid: 400, 'not-found': 404, 'not-paired': 409, unreachable: 502 };

export interface UiServerOptions {
  /** 0 picks a free port */
  port: number;
  nowMs?: () => number;
}

export interface RunningUi {
  /** the one-time login link */
  loginUrl: string;
  stop(): Promise<void>;
}

function refuse(res: ServerResponse, r: Refusal): void {
  res.writeHead(r.status, { ...SECURITY_HEADERS, 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: r.error, code: r.code }));
}

function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  return new Promise((resolve, reject) => {
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      resolve(null);
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > UI_FORM_MAX_BYTES) {
        reject(new HostError(`the form is larger than ${UI_FORM_MAX_BYTES} bytes`, 'invalid'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

export async function startUiServer(node: HostNode, options: UiServerOptions): Promise<RunningUi> {
  const secret = loadUiSecret(node.home);
  const streams = new Set<ServerResponse>();
  let version = node.store.agentMail.dataVersion();
  let watch: NodeJS.Timeout | null = null;
  let heartbeat: NodeJS.Timeout | null = null;
  let gate: UiGate | null = null;

  const broadcast = (): void => {
    for (const res of streams) res.write(`event: change\ndata: ${Date.now()}\n\n`);
  };
  const look = (): void => {
    const now = node.store.agentMail.dataVersion();
    if (now === version) return;
    version = now;
    broadcast();
  };
  const openStream = (req: IncomingMessage, res: ServerResponse): void => {
    if (streams.size >= UI_EVENT_STREAMS_MAX) {
      refuse(res, { status: 503, code: 'BUSY', error: `at most ${UI_EVENT_STREAMS_MAX} live pages at once` });
      return;
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream', connection: 'keep-alive' });
    res.write('retry: 1000\n\n');
    streams.add(res);
    if (watch === null) {
      version = node.store.agentMail.dataVersion();
      watch = setInterval(look, UI_WATCH_INTERVAL_MS);
      heartbeat = setInterval(() => {
        for (const s of streams) s.write(': ping\n\n');
      }, UI_HEARTBEAT_MS);
    }
    req.on('close', () => {
      streams.delete(res);
      if (streams.size === 0 && watch !== null) {
        clearInterval(watch);
        if (heartbeat !== null) clearInterval(heartbeat);
        watch = null;
        heartbeat = null;
      }
    });
  };

  /** The page for `url`'s view (?agent, ?q, ?msg), whole or its live part. */
  const page = (res: ServerResponse, url: URL, csrf: string, fragment: boolean, error: string | null, status = 200): void => {
    const agent = url.searchParams.get('agent') || null;
    const query = url.searchParams.get('q') || null;
    const msgId = url.searchParams.get('msg');
    const req: PageRequest = { agent, query, opened: null, found: null, error, csrf };
    let view: OwnerView;
    try {
      view = ownerView(node, agent);
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
      req.agent = null;
      req.error = err.message;
      status = STATUS_OF_KIND[err.kind ?? 'invalid'];
      view = ownerView(node, null);
    }
    if (msgId !== null) {
      req.opened = openMessage(node, msgId);
      if (req.opened === null) req.error ??= `no message ${msgId} on this host`;
    }
    if (query !== null) {
      try {
        req.found = searchAll(node, query, req.agent);
      } catch (err) {
        if (!(err instanceof HostError)) throw err;
        req.error ??= err.message;
      }
    }
    const body = (fragment ? livePart(view, req) : fullPage(view, req)).text;
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' });
    res.end(body);
  };

  /** A write the owner asked for, through a host operation; then back to the page (303), or the page with the failure. */
  const write = async (g: UiGate, req: IncomingMessage, res: ServerResponse, url: URL, session: string): Promise<void> => {
    // a form of this page always has an Origin: a write without one did not come from it
    if (req.headers.origin !== g.origin) {
      refuse(res, { status: 403, code: 'BAD_ORIGIN', error: 'a write must come from this page' });
      return;
    }
    const form = await readForm(req);
    if (form === null) {
      refuse(res, { status: 415, code: 'BAD_FORM', error: 'a write is a form (application/x-www-form-urlencoded)' });
      return;
    }
    if (!g.checkCsrf(session, form.get('csrf'))) {
      refuse(res, { status: 403, code: 'BAD_CSRF', error: "the form's CSRF token is missing or wrong: reload the page" });
      return;
    }
    const csrf = g.csrfToken(session);
    let back = '/';
    try {
      if (url.pathname === '/send') {
        const to = (form.get('to') ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '');
        const sent = sendMail(node, { from: OWNER, to, subject: form.get('subject') ?? '', body: form.get('body') ?? '', kind: form.get('kind') ?? 'message' });
        back = `/?msg=${sent.id}`;
      } else if (url.pathname === '/retry') {
        retryRowNow(node, Number(form.get('row')));
        back = '/#waiting';
      } else if (url.pathname === '/resume') {
        resumeThread(node, form.get('thread') ?? '', RESUMED_BY);
        back = '/#guard';
      } else {
        dismissQuarantined(node, { relay_url: form.get('relay_url') ?? '', epoch: form.get('epoch') ?? '', seq: Number(form.get('seq')) });
        back = '/#quarantine';
      }
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
      page(res, new URL('/', g.origin), csrf, false, err.message, STATUS_OF_KIND[err.kind ?? 'invalid']);
      return;
    }
    broadcast();
    res.writeHead(303, { ...SECURITY_HEADERS, location: back });
    res.end();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const g = gate;
    if (g === null) return refuse(res, { status: 503, code: 'STARTING', error: 'starting: try again' });
    const source = g.checkSource(req);
    if (source !== null) return refuse(res, source);
    if ((req.url ?? '').length > QUERY_MAX_CHARS) return refuse(res, { status: 414, code: 'TOO_LONG', error: 'the address is too long' });
    const url = new URL(req.url ?? '/', g.origin);
    const method = req.method ?? 'GET';
    if (url.pathname === '/login' && method === 'GET') {
      const cookie = g.redeem(url.searchParams.get('token') ?? '');
      if (cookie === null)
        return refuse(res, { status: 403, code: 'BAD_TOKEN', error: 'this login link was used already or has expired: run agentmbx ui again' });
      res.writeHead(303, { ...SECURITY_HEADERS, 'set-cookie': cookie, location: '/' });
      res.end();
      return;
    }
    const session = g.session(req);
    if (session === null) return refuse(res, { status: 401, code: 'NO_SESSION', error: 'open the link `agentmbx ui` printed' });
    if (method === 'POST' && WRITES.includes(url.pathname)) return write(g, req, res, url, session);
    if (method !== 'GET') return refuse(res, { status: 405, code: 'BAD_METHOD', error: `${method} ${url.pathname} is not served` });
    const asset = ASSETS[url.pathname];
    if (asset !== undefined) {
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type });
      res.end(asset.body);
      return;
    }
    if (url.pathname === '/events') return openStream(req, res);
    if (url.pathname === '/api/view') {
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'application/json' });
      res.end(JSON.stringify(ownerView(node, url.searchParams.get('agent') || null)));
      return;
    }
    if (url.pathname === '/') return page(res, url, g.csrfToken(session), req.headers['x-mbx-fragment'] === '1', null);
    return refuse(res, { status: 404, code: 'NOT_FOUND', error: `nothing at ${url.pathname}` });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // a store failure or a bug: one line, never a stack trace in the answer
      const error = err instanceof StoreError || err instanceof HostError ? err.message : 'internal error (see the terminal running agentmbx ui)';
      if (!(err instanceof StoreError || err instanceof HostError)) process.stderr.write(`agentmbx ui: ${err instanceof Error ? err.message : String(err)}\n`);
      if (res.headersSent) res.destroy();
      else refuse(res, { status: err instanceof HostError ? STATUS_OF_KIND[err.kind ?? 'invalid'] : 500, code: 'FAILED', error });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // the page is for this machine's owner only: loopback, never the LAN
    server.listen(options.port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  gate = new UiGate({ secret, port, host: node.config.host, ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }) });
  return {
    loginUrl: gate.loginUrl(),
    async stop() {
      if (watch !== null) clearInterval(watch);
      if (heartbeat !== null) clearInterval(heartbeat);
      for (const s of streams) s.end();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
