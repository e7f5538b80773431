// The owner's page gate and its HTML escaping, as pure code: the one-time login, the cookie's MAC
// and life, the CSRF token, the Host/Origin/Sec-Fetch-Site checks, and that no interpolated text
// can become markup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { randomBytes } from 'node:crypto';
import { LOGIN_TOKEN_TTL_MS, SESSION_TTL_MS, UiGate } from '../../src/ui/ui-gate.ts';
import { html, multiline } from '../../src/ui/html-text.ts';
import { TestClock } from '../helpers/clock.ts';

function request(headers: Record<string, string>): IncomingMessage {
  return { headers } as unknown as IncomingMessage;
}

function gate(clock: TestClock, secret = randomBytes(32)): UiGate {
  return new UiGate({ secret, port: 4100, host: 'alpha', nowMs: clock.nowMs });
}

function tokenOf(g: UiGate): string {
  return new URL(g.loginUrl()).searchParams.get('token') ?? '';
}

test('the login link works once, sets an HttpOnly SameSite=Strict cookie, and expires', () => {
  const clock = new TestClock();
  const g = gate(clock);
  assert.equal(g.redeem('wrong'), null);
  const setCookie = g.redeem(tokenOf(g)) ?? assert.fail('refused');
  assert.match(setCookie, /^mbx_ui_alpha=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
  assert.equal(g.redeem(tokenOf(g)), null, 'a second use is refused');
  const late = gate(clock);
  clock.advance(LOGIN_TOKEN_TTL_MS + 1);
  assert.equal(late.redeem(tokenOf(late)), null, 'an expired link is refused');
});

test("a session cookie is honoured only with its MAC under this home's secret and within its life", () => {
  const clock = new TestClock();
  const secret = randomBytes(32);
  const g = gate(clock, secret);
  const cookie = (g.redeem(tokenOf(g)) ?? '').split(';')[0] ?? '';
  const value = cookie.slice(cookie.indexOf('=') + 1);
  assert.equal(g.session(request({ cookie: `other=1; ${cookie}` })), value);
  assert.equal(gate(clock, secret).session(request({ cookie })), value, 'a restarted page of the same home knows it');
  assert.equal(gate(clock).session(request({ cookie })), null, "another home's secret does not");
  assert.equal(g.session(request({ cookie: cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) })), null, 'a changed MAC is refused');
  assert.equal(g.session(request({ cookie: cookie.replace(/=\d/, '=9') })), null, 'a changed issue time is refused');
  assert.equal(g.session(request({})), null);
  const csrf = g.csrfToken(value);
  assert.ok(g.checkCsrf(value, csrf));
  assert.ok(!g.checkCsrf(value, null));
  assert.ok(!g.checkCsrf(value, `${csrf.slice(0, -1)}x`));
  clock.advance(SESSION_TTL_MS);
  assert.equal(g.session(request({ cookie })), null, 'an old session is refused');
});

test('Host, Origin and Sec-Fetch-Site must say the request comes from this page as printed', () => {
  const g = gate(new TestClock());
  const ok = { host: '127.0.0.1:4100' };
  assert.equal(g.checkSource(request(ok)), null);
  assert.equal(g.checkSource(request({ ...ok, origin: 'http://127.0.0.1:4100', 'sec-fetch-site': 'same-origin' })), null);
  assert.equal(g.checkSource(request({ ...ok, 'sec-fetch-site': 'none' })), null, 'the owner opening the link');
  for (const [headers, code] of [
    [{ host: 'evil.example:4100' }, 'BAD_HOST'],
    [{ host: 'localhost:4100' }, 'BAD_HOST'],
    [{ host: '127.0.0.1:4101' }, 'BAD_HOST'],
    [{}, 'BAD_HOST'],
    [{ ...ok, origin: 'http://evil.example' }, 'BAD_ORIGIN'],
    [{ ...ok, origin: 'http://127.0.0.1:8080' }, 'BAD_ORIGIN'],
    [{ ...ok, origin: 'null' }, 'BAD_ORIGIN'],
    [{ ...ok, 'sec-fetch-site': 'same-site' }, 'BAD_ORIGIN'],
    [{ ...ok, 'sec-fetch-site': 'cross-site' }, 'BAD_ORIGIN'],
  ] as const) {
    assert.equal(g.checkSource(request(headers))?.code, code, JSON.stringify(headers));
  }
});

test('interpolated text never becomes markup; controls and bidi characters show as in the CLI', () => {
  const hostile = '<img src=x onerror="alert(1)"> & \'q\' \u202edecoy\u202c\x1b[31m\nnext';
  assert.equal(
    html`<b title="${hostile}">${hostile}</b>`.text,
    '<b title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &#39;q&#39; \\u202edecoy\\u202c\\x1b[31m\\x0anext">&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &#39;q&#39; \\u202edecoy\\u202c\\x1b[31m\\x0anext</b>',
  );
  assert.equal(multiline('a\n\tb <i>\u2066').text, 'a\n\tb &lt;i&gt;\\u2066', 'a body keeps its lines');
  assert.equal(html`<p>${[html`<i>${'<x>'}</i>`, '<y>']}</p>`.text, '<p><i>&lt;x&gt;</i>&lt;y&gt;</p>');
});
