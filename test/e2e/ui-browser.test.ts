// The owner's page in a real browser: Debian's headless Chromium driven by playwright-core, two
// paired hosts with their daemons, and `agentmbx ui` of the first. Mail sent from the CLI appears
// live (no reload) within a second, its state moves to acked when the recipient acks, a hostile
// subject renders as text, the owner writes, searches and dismisses through the page, the page shows
// how each agent was woken and resumes a thread the loop guard tripped on, and requests without
// the cookie, from a foreign Origin or Host, or without the CSRF token are refused. A screenshot of
// the main view is left in test/artifacts/ (git-ignored).
import { after, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { E2E_TIMEOUT_MS, cli, cliJson, newCliHost, pairCli, startCliDaemon, type CliHost } from './host-helpers.ts';
import { REPO_ROOT, runCli, spawnCli, trackGroup, type Child } from '../helpers/processes.ts';
import { waitUntil } from '../helpers/wait.ts';
import { HostStore } from '../../src/host/store/host-store.ts';
import { guardOverview, setGuardSettings } from '../../src/host/wake/loop-guard.ts';
import { lanAddress } from '../../src/common/lan-address.ts';

const CHROMIUM = '/usr/bin/chromium';
// Playwright gives the browser a fresh --user-data-dir of its own (and refuses one in args).
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SKIP = existsSync(CHROMIUM) ? false : `no ${CHROMIUM} (Debian's chromium package could not be installed; .ci/run tries)`;
/** The bound: mail sent from the CLI is on the page this soon, without a reload. */
const LIVE_WITHIN_MS = 1_000;
const ARTIFACTS = join(REPO_ROOT, 'test', 'artifacts');

let alpha: CliHost;
let beta: CliHost;
let ui: Child;
let origin = '';
let loginUrl = '';
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cookie = '';
/** Kills the browser's process group (also when a test failed). */
let killBrowser = (): void => {};

after(() => killBrowser());

interface Answer {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One raw HTTP request to the page server (node:http, so Host and Origin are ours to set). */
function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, origin);
    const req = request({ host: '127.0.0.1', port: url.port, method, path: url.pathname + url.search, headers: { host: url.host, ...headers } }, (res) => {
      let text = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => {
          text += c;
        })
        .on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Two paired hosts with daemons, alpha's page, and a browser logged in to it. */
async function setUp(): Promise<void> {
  // the browser starts while the hosts are made: both take seconds on a busy machine
  const launching = chromium.launchServer({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true }).then((server) => {
    const pid = server.process().pid;
    if (pid !== undefined) killBrowser = trackGroup(pid);
    return server;
  });
  [alpha, beta] = await Promise.all([newCliHost('alpha', ['ann']), newCliHost('beta', ['bob'])]);
  await Promise.all([startCliDaemon(alpha), startCliDaemon(beta)]);
  await pairCli(alpha, beta);
  ui = spawnCli(['ui', '--json'], { env: { ...process.env, ...alpha.env } });
  loginUrl = (JSON.parse(await ui.waitForLine(/"url"/)) as { url: string }).url;
  origin = new URL(loginUrl).origin;
  const server = await launching;
  browser = await chromium.connect(server.wsEndpoint());
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  await page.goto(loginUrl);
  const jar = await context.cookies();
  const session = jar.find((c) => c.name === 'mbx_ui_alpha') ?? assert.fail(`no session cookie: ${JSON.stringify(jar)}`);
  assert.equal(session.httpOnly, true);
  assert.equal(session.sameSite, 'Strict');
  cookie = `${session.name}=${session.value}`;
  await page.waitForSelector('#liveness.online');
}

async function liveMail(): Promise<void> {
  // mail sent from the CLI appears live, hostile text stays text, and its state moves to acked
  assert.equal(new URL(page.url()).pathname, '/', 'the login link led to the page');
  await page.evaluate(() => {
    (globalThis as unknown as { loadMark: string }).loadMark = 'first load';
  });
  const subject = '<img src=x onerror="window.pwned=1"> \u202edecoy\u202c';
  const id = (
    await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--kind', 'request', '--subject', subject, '--body', 'see <script>window.pwned=2</script>'])
  ).trim();
  const sentAt = Date.now();
  const article = `#threads article.msg[data-id="${id}"]`;
  await page.waitForSelector(article, { timeout: LIVE_WITHIN_MS });
  const took = Date.now() - sentAt;
  assert.ok(took <= LIVE_WITHIN_MS, `shown after ${took} ms`);

  // rendered as the CLI shows it: the markup as text, the bidi overrides as visible escapes
  assert.equal(await page.textContent(`${article} .subject`), '<img src=x onerror="window.pwned=1"> \\u202edecoy\\u202c');
  assert.equal(await page.locator('#live img, #live script').count(), 0);
  assert.equal(await page.textContent(`${article} .needs-reply`), 'needs reply');
  assert.equal(await page.textContent(`${article} .trust`), 'local');
  assert.match((await page.textContent(`${article} .from`)) ?? '', /^ann@alpha$/);

  await cli(beta, ['ack', id, '--agent', 'bob', '--note', 'on it']);
  await page.waitForSelector(`${article} li.state[data-recipient="bob@beta"][data-state="acked"]`, { timeout: 20_000 });
  assert.equal(await page.evaluate(() => (globalThis as unknown as { loadMark?: string; pwned?: number }).loadMark), 'first load', 'no reload happened');
  assert.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined);
  // the message opened (a peek: bob's own view of it is unchanged on beta, alpha's copy is alpha's)
  await page.click(`${article} a.subject`);
  assert.equal(await page.textContent('#opened pre.body'), 'see <script>window.pwned=2</script>');
  assert.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: number }).pwned), undefined);

  await page.goto(`${origin}/`);
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, 'ui-main.png'), fullPage: true });
}

async function ownerWrites(): Promise<void> {
  // the owner writes to an agent from the page, as owner@alpha with trust local
  await page.goto(`${origin}/?agent=ann`);
  await page.fill('form.write input[name=to]', 'ann');
  await page.fill('form.write input[name=subject]', 'from the owner');
  await page.fill('form.write textarea[name=body]', 'please look at the build');
  await Promise.all([page.waitForURL(/\?msg=/, { timeout: 5000 }), page.click('form.write button')]).catch(async (err: unknown) => {
    assert.fail(`${String(err)}: ${await page.textContent('body')}`);
  });
  const id = new URL(page.url()).searchParams.get('msg') ?? '';
  assert.equal(await page.textContent(`#opened article.msg[data-id="${id}"] .from`), 'owner@alpha');
  const inbox = await cliJson<{ messages: Array<{ id: string; from: string; trust: string; subject: string }> }>(alpha, ['inbox', '--agent', 'ann']);
  assert.deepEqual(
    inbox.messages.map((m) => [m.id, m.from, m.trust, m.subject]),
    [[id, 'owner@alpha', 'local', 'from the owner']],
  );
  // the full-text index finds it, in every mailbox and in ann's; a query without words is the host's refusal, shown
  for (const path of ['/?q=build', '/?agent=ann&q=build']) {
    await page.goto(`${origin}${path}`);
    assert.deepEqual(await page.locator('#search article.msg').evaluateAll((els) => els.map((e) => e.getAttribute('data-id'))), [id], path);
  }
  await page.goto(`${origin}/?q=${encodeURIComponent('!!')}`);
  assert.match((await page.textContent('.failure')) ?? '', /the search query has no words/);
}

async function dismissQuarantined(): Promise<void> {
  // a quarantined item is dismissed from the page, and the page follows live
  await page.goto(`${origin}/`);
  // what the relay client would have written: another connection to the same store
  const store = HostStore.open(join(alpha.env.MBX_HOME as string, 'host.db'));
  after(() => store.close());
  const betaKey = store.peers.get('beta')?.host_pubkey ?? assert.fail('beta is not paired');
  store.relay.quarantine({
    relay_url: 'http://relay.test',
    epoch: 'e1',
    seq: 3,
    kind: 'envelope',
    item_id: 'item-1',
    sender_pubkey: betaKey,
    reason: 'bad signature <b>',
    wire_b64: 'e30=',
    at: Date.now(),
  });
  await page.waitForSelector('#quarantine li.quarantined[data-seq="3"]', { timeout: 5_000 });
  assert.match((await page.textContent('#quarantine .reason')) ?? '', /^bad signature <b>$/);
  await Promise.all([page.waitForURL(/#quarantine$/), page.click('#quarantine li.quarantined[data-seq="3"] button')]);
  await page.waitForSelector('#quarantine p.empty');
  // dismissed as `relay quarantine dismiss` does: kept, no longer counted
  assert.deepEqual(store.relay.quarantined(100, false), []);
  assert.deepEqual(
    store.relay.quarantined().map((q) => [q.seq, q.dismissed_at !== null]),
    [[3, true]],
  );
}

async function guardResumed(): Promise<void> {
  // a tiny budget, a few messages between ann and bob in one thread, and ann's hook trips the guard:
  // the page shows it live with the budget, how ann was (not) woken, and resumes it as `guard resume` does
  await page.goto(`${origin}/`);
  const alphaStore = HostStore.open(join(alpha.env.MBX_HOME as string, 'host.db'));
  const betaStore = HostStore.open(join(beta.env.MBX_HOME as string, 'host.db'));
  after(() => {
    alphaStore.close();
    betaStore.close();
  });
  // `guard config --budget 1`'s operation, on the host's store
  setGuardSettings(alphaStore, { budget: 1, windowMs: 600_000 });
  const root = (await cli(alpha, ['send', '--from', 'ann', '--to', 'bob@beta', '--subject', 'shall we loop', '--body', 'x'])).trim();
  await waitUntil("ann's message on beta", 20_000, () => Promise.resolve(betaStore.mail.message(root) === undefined ? 'not there yet' : null));
  const reply = (await cli(beta, ['send', '--from', 'bob', '--to', 'ann@alpha', '--subject', 'loop back', '--body', 'y', '--reply-to', root])).trim();
  await page.waitForSelector(`#threads article.msg[data-id="${reply}"]`, { timeout: 20_000 });
  // the second message of the pair in the thread passes the budget of 1 when ann's hook looks
  const hook = await runCli(['hook', 'claude', 'user-prompt-submit', '--agent', 'ann'], alpha.env);
  assert.equal(hook.code, 0, hook.stderr);
  const held = `#guard li.held[data-thread="${root}"]`;
  await page.waitForSelector(held, { timeout: 5_000 });
  assert.equal(await page.textContent('#guard .budget .messages'), '1');
  assert.equal(await page.textContent(`${held} .pair`), 'ann@alpha <-> bob@beta');
  await page.waitForSelector('#mailboxes li[data-agent="ann"] .wake-path[data-path="hook"]');
  assert.match(
    (await page.textContent(`#threads article.msg[data-id="${reply}"] li.state[data-recipient="ann@alpha"] .wake`)) ?? '',
    new RegExp(`^woken: none \\(held by the loop guard: thread ${root} tripped`),
  );
  await Promise.all([page.waitForURL(/#guard$/), page.click(`${held} button`)]);
  await page.waitForSelector('#guard p.empty');
  // lifted in the store as `guard resume` lifts it, and recorded as the page's
  assert.deepEqual(guardOverview(alphaStore).held, []);
  assert.equal(alphaStore.db.get<{ by: string }>('SELECT lifted_by AS by FROM wake_guard_trips WHERE thread = ?', root)?.by, "the owner (the owner's page)");
}

async function refusals(): Promise<void> {
  // requests without the cookie, from a foreign Origin or Host, or without the CSRF token are refused
  const ok = await call('GET', '/', { cookie });
  assert.equal(ok.status, 200);
  const csrf = /name="csrf" value="([^"]+)"/.exec(ok.body)?.[1] ?? assert.fail('no csrf token in the page');
  const form = { cookie, 'content-type': 'application/x-www-form-urlencoded', origin };
  const send = (token: string | null): string =>
    new URLSearchParams({ ...(token === null ? {} : { csrf: token }), to: 'ann', subject: 'forged', body: 'x' }).toString();

  for (const [what, answer, status, code] of [
    ['no cookie', await call('GET', '/', {}), 401, 'NO_SESSION'],
    ['no cookie, events', await call('GET', '/events', {}), 401, 'NO_SESSION'],
    ['no cookie, a write', await call('POST', '/retry', { 'content-type': 'application/x-www-form-urlencoded', origin }, 'row=1'), 401, 'NO_SESSION'],
    ['a forged cookie', await call('GET', '/', { cookie: cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')) }), 401, 'NO_SESSION'],
    ['the login link again', await call('GET', new URL(loginUrl).pathname + new URL(loginUrl).search, {}), 403, 'BAD_TOKEN'],
    ['a rebinding Host', await call('GET', '/', { cookie, host: `evil.example:${new URL(origin).port}` }), 403, 'BAD_HOST'],
    ['localhost as Host', await call('GET', '/', { cookie, host: `localhost:${new URL(origin).port}` }), 403, 'BAD_HOST'],
    ['a foreign Origin', await call('GET', '/api/view', { cookie, origin: 'http://evil.example' }), 403, 'BAD_ORIGIN'],
    ['another local port', await call('GET', '/api/view', { cookie, 'sec-fetch-site': 'same-site' }), 403, 'BAD_ORIGIN'],
    ['a write from a foreign Origin', await call('POST', '/send', { ...form, origin: 'http://evil.example' }, send(csrf)), 403, 'BAD_ORIGIN'],
    ['a write without Origin', await call('POST', '/send', { cookie, 'content-type': 'application/x-www-form-urlencoded' }, send(csrf)), 403, 'BAD_ORIGIN'],
    ['a write without the CSRF token', await call('POST', '/send', form, send(null)), 403, 'BAD_CSRF'],
    ['a write with a wrong CSRF token', await call('POST', '/send', form, send(`${csrf.slice(0, -2)}xx`)), 403, 'BAD_CSRF'],
    ['a resume without the CSRF token', await call('POST', '/resume', form, 'thread=t1'), 403, 'BAD_CSRF'],
  ] as const) {
    assert.equal(answer.status, status, `${what}: ${answer.body}`);
    assert.equal((JSON.parse(answer.body) as { code: string }).code, code, what);
  }
  // nothing of the page listens on the LAN: its port on this machine's LAN address refuses the connection
  const lan = lanAddress();
  if (lan !== '127.0.0.1') {
    const reached = await new Promise<string>((resolve) => {
      const socket = connect({ host: lan, port: Number(new URL(origin).port) });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    });
    assert.equal(reached, 'ECONNREFUSED', `the page's port on ${lan}`);
  }
  const subjects = (): Promise<string[]> =>
    call('GET', '/api/view?agent=ann', { cookie }).then((a) =>
      (JSON.parse(a.body) as { threads: Array<{ messages: Array<{ subject: string }> }> }).threads.flatMap((t) => t.messages.map((m) => m.subject)),
    );
  assert.ok(!(await subjects()).includes('forged'), 'no refused write was stored');
  // with everything right the same write goes through (the refusals above were for their reason)
  const good = await call('POST', '/send', form, send(csrf));
  assert.equal(good.status, 303, good.body);
  assert.ok((await subjects()).includes('forged'));
  // a host operation's refusal is shown on the page with its status: no outbox row 999999 waits
  const retry = await call('POST', '/retry', form, new URLSearchParams({ csrf, row: '999999' }).toString());
  assert.equal(retry.status, 404);
  assert.match(retry.body, /<p class="failure" role="alert">no queued outbox row 999999/);
  const resume = await call('POST', '/resume', form, new URLSearchParams({ csrf, thread: 'no-such-thread' }).toString());
  assert.equal(resume.status, 404);
  assert.match(resume.body, /<p class="failure" role="alert">the loop guard holds no thread no-such-thread/);
  // and the browser itself keeps another origin's page out: a fetch from it carries no cookie and is answered 401 or refused
  const foreign = await context.newPage();
  await foreign.goto('about:blank');
  const fromElsewhere = await foreign.evaluate(async (url) => {
    try {
      return (await fetch(url, { credentials: 'include' })).status;
    } catch {
      return 'blocked';
    }
  }, `${origin}/api/view`);
  assert.notEqual(fromElsewhere, 200);
  await foreign.close();
}

// One browser for the file: the steps share the hosts, the page and its session, in this order.
test("the owner's page in a real browser", { skip: SKIP, timeout: E2E_TIMEOUT_MS }, async (t: TestContext) => {
  await setUp();
  await t.test('mail sent from the CLI appears live, hostile text stays text, and its state moves to acked', liveMail);
  await t.test('the owner writes to an agent from the page, as owner@alpha with trust local', ownerWrites);
  await t.test('a quarantined item is dismissed from the page, and the page follows live', dismissQuarantined);
  await t.test('the page shows how agents were woken and resumes a thread the loop guard holds', guardResumed);
  await t.test('requests without the cookie, from a foreign Origin or Host, or without the CSRF token are refused', refusals);
});
