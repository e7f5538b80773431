// Who may use the owner's page: a browser on this machine holding the cookie that the one-time
// login link set. The per-home secret (ui.secret in the home, 0600) keys the session cookie and the
// CSRF token by HMAC, so nothing per session is kept in memory and a restarted `agentmbx ui` of the
// same home still knows its cookie. Host and Origin are checked on every request (DNS rebinding, a
// page of another local port), Sec-Fetch-Site where the browser sends it.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { readPrivateFile, writePrivateFile } from '../host/core/home-files.ts';

/** The per-home secret behind the page's cookie and CSRF tokens. */
export const UI_SECRET_FILE = 'ui.secret';
/** How long the printed login link works (once). */
export const LOGIN_TOKEN_TTL_MS = 15 * 60_000;
/** How long a session cookie is honoured after login. */
export const SESSION_TTL_MS = 12 * 60 * 60_000;
/** Longest Cookie header looked at. */
const COOKIE_HEADER_MAX_CHARS = 8192;

/** The home's page secret (32 random bytes), made on first use. */
export function loadUiSecret(home: string): Buffer {
  const path = join(home, UI_SECRET_FILE);
  const text = readPrivateFile(path);
  if (text !== null && /^[0-9a-f]{64}$/.test(text.trim())) return Buffer.from(text.trim(), 'hex');
  const secret = randomBytes(32);
  writePrivateFile(path, `${secret.toString('hex')}\n`);
  return secret;
}

/** Why a request is refused: its HTTP status and a stable code. */
export interface Refusal {
  status: number;
  code: string;
  error: string;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export interface GateOptions {
  secret: Buffer;
  port: number;
  /** this host's name: the cookie is named after it, so pages of two homes on one machine keep apart */
  host: string;
  nowMs?: () => number;
}

export class UiGate {
  readonly origin: string;
  readonly cookieName: string;
  readonly #secret: Buffer;
  readonly #hostHeader: string;
  readonly #nowMs: () => number;
  readonly #loginToken = randomBytes(32).toString('base64url');
  readonly #loginExpiresAt: number;
  #loginUsed = false;

  constructor(options: GateOptions) {
    this.#secret = options.secret;
    this.#hostHeader = `127.0.0.1:${options.port}`;
    this.origin = `http://${this.#hostHeader}`;
    this.cookieName = `mbx_ui_${options.host}`;
    this.#nowMs = options.nowMs ?? Date.now;
    this.#loginExpiresAt = this.#nowMs() + LOGIN_TOKEN_TTL_MS;
  }

  /** The link the command prints: it works once, within LOGIN_TOKEN_TTL_MS. */
  loginUrl(): string {
    return `${this.origin}/login?token=${this.#loginToken}`;
  }

  #mac(purpose: string, value: string): string {
    return createHmac('sha256', this.#secret).update(`${purpose}\n${this.cookieName}\n${value}`).digest('base64url');
  }

  /** Host, Origin and Sec-Fetch-Site: the request must come from this page, addressed as printed. */
  checkSource(req: IncomingMessage): Refusal | null {
    if (req.headers.host !== this.#hostHeader) return { status: 403, code: 'BAD_HOST', error: `this page answers only as ${this.#hostHeader}` };
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== this.origin) return { status: 403, code: 'BAD_ORIGIN', error: 'requests from another origin are refused' };
    // a browser says where a request comes from: a link or form of another site, or of another port
    // of this machine (same-site), is refused; 'none' is the owner opening the URL
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none')
      return { status: 403, code: 'BAD_ORIGIN', error: 'requests from another site are refused' };
    return null;
  }

  /** Spends the one-time login token: the Set-Cookie header of a new session, or null when the token is wrong, used or expired. */
  redeem(token: string): string | null {
    if (this.#loginUsed || this.#nowMs() > this.#loginExpiresAt || !sameText(token, this.#loginToken)) return null;
    this.#loginUsed = true;
    const value = `${this.#nowMs()}.${randomBytes(16).toString('base64url')}`;
    const cookie = `${value}.${this.#mac('session', value)}`;
    return `${this.cookieName}=${cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${Math.floor(SESSION_TTL_MS / 1000)}`;
  }

  /** The request's valid session cookie, or null. */
  session(req: IncomingMessage): string | null {
    const header = req.headers.cookie;
    if (header === undefined || header.length > COOKIE_HEADER_MAX_CHARS) return null;
    for (const part of header.split(';')) {
      const eq = part.indexOf('=');
      if (eq < 0 || part.slice(0, eq).trim() !== this.cookieName) continue;
      const cookie = part.slice(eq + 1).trim();
      const m = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})\.([A-Za-z0-9_-]{43})$/.exec(cookie);
      if (m === null) continue;
      const value = `${m[1]}.${m[2]}`;
      const issued = Number(m[1]);
      if (sameText(m[3] ?? '', this.#mac('session', value)) && this.#nowMs() - issued < SESSION_TTL_MS && issued <= this.#nowMs() + 60_000) return cookie;
    }
    return null;
  }

  /** The CSRF token a session's forms carry. */
  csrfToken(session: string): string {
    return this.#mac('csrf', session);
  }

  checkCsrf(session: string, given: string | null): boolean {
    return given !== null && sameText(given, this.csrfToken(session));
  }
}
