// The owner's page as HTML: the full document (works without JavaScript) and the live part alone,
// which the page's script fetches again whenever the store changes. Every value from the store
// goes through html-text.ts.
import { ageText } from '../common/time-text.ts';
import { ENVELOPE_KINDS } from '../protocol/records/envelope.ts';
import type { RecipientStatus } from '../host/core/receipts.ts';
import type { MailboxSummary, OwnerMessage, OwnerView } from '../host/owner-view.ts';
import { formValue, html, multiline, type SafeHtml } from './html-text.ts';

/** What the page is asked to show beyond the overview. */
export interface PageRequest {
  agent: string | null;
  query: string | null;
  /** the opened message, with its body */
  opened: OwnerMessage | null;
  found: OwnerMessage[] | null;
  /** a failure to show on top (a refused send, a search without words) */
  error: string | null;
  csrf: string;
}

function link(params: Record<string, string | null>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null) search.set(k, v);
  const text = search.toString();
  return text === '' ? '/' : `/?${text}`;
}

function states(recipients: readonly RecipientStatus[]): SafeHtml {
  return html`<ul class="states">${recipients.map((r) => html`<li class="state state-${r.state}" data-recipient="${r.recipient}" data-state="${r.state}"><span class="who">${r.recipient}</span> <b>${r.state}</b>${r.via === null ? '' : html` <span class="via">via ${r.via}</span>`}${r.at === null ? '' : html` <time>${r.at}</time>`}${r.note === null ? '' : html` <span class="note">${r.note}</span>`}${r.wake === null ? '' : html` <span class="wake" data-wake="${r.wake}">woken: ${r.wake}</span>`}</li>`)}</ul>`;
}

function message(m: OwnerMessage, req: PageRequest): SafeHtml {
  return html`<article class="msg" data-id="${m.id}">
<div class="head"><span class="kind kind-${m.kind}">${m.kind}</span> <a class="subject" href="${link({ agent: req.agent, msg: m.id })}">${m.subject}</a>${m.needs_reply ? html` <span class="needs-reply">needs reply</span>` : ''}</div>
<div class="meta"><span class="from">${m.from}</span> → <span class="to">${m.to.join(', ')}</span> · <time>${m.ts}</time></div>
<div class="vouched">vouched for by: <span class="trust">${m.trust}</span></div>
${m.body === undefined ? html`<p class="preview">${m.preview}</p>` : html`<pre class="body">${multiline(m.body)}</pre>`}
${states(m.recipients)}
</article>`;
}

function section(id: string, title: string, body: SafeHtml | SafeHtml[], empty: string, count: number): SafeHtml {
  return html`<section id="${id}"><h2>${title}</h2>${count === 0 ? html`<p class="empty">${empty}</p>` : body}</section>`;
}

/** The wake paths that have told a mailbox's agent of its mail, each with the unread mail it has not told yet. */
function wakePaths(b: MailboxSummary): SafeHtml {
  if (b.wake.length === 0) return html`<span class="wake-paths none">no wake path</span>`;
  return html`<span class="wake-paths">${b.wake.map((w) => html`<span class="wake-path" data-path="${w.path}" title="last told ${w.last_at}">${w.path}${w.untold === 0 ? '' : html` <b class="untold">${w.untold} untold</b>`}</span>`)}</span>`;
}

/** The loop guard: its budget and window, and each thread it holds with a resume button (`guard resume`). */
function guardSection(view: OwnerView, csrf: string): SafeHtml {
  const { guard } = view;
  const held = guard.held.map(
    (
      t,
    ) => html`<li class="held" data-thread="${t.thread}">thread <code class="thread">${t.thread}</code> held since <time>${t.since}</time>: <span class="pair">${t.pair}</span> wrote ${t.count} (at <a href="${link({ msg: t.message })}">${t.message}</a>)
<form method="post" action="/resume"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="thread" value="${formValue(t.thread)}"><button>resume</button></form></li>`,
  );
  return html`<section id="guard"><h2>Loop guard</h2><p class="budget">budget: <b class="messages">${guard.budget}</b> messages per thread and agent pair in <b class="window">${ageText(guard.window_ms)}</b> without the owner</p>
${held.length === 0 ? html`<p class="empty">no thread held</p>` : html`<ul>${held}</ul>`}</section>`;
}

function mailboxList(view: OwnerView): SafeHtml {
  return html`<section id="mailboxes"><h2>Mailboxes</h2><ul>
<li${view.agent === null ? html` class="here"` : ''}><a href="/">all mailboxes</a></li>
${view.mailboxes.map((b) => html`<li class="mailbox${view.agent === b.name ? ' here' : ''}" data-agent="${b.name}"><a href="${link({ agent: b.name })}">${b.name}</a>${b.role === null ? '' : html` <span class="role">role:${b.role}</span>`} <span class="unread" title="unread">${b.unread}</span> <time class="last">${b.last_activity ?? 'no mail yet'}</time> ${wakePaths(b)}</li>`)}
</ul></section>`;
}

function plumbing(view: OwnerView, csrf: string): SafeHtml {
  const relay =
    view.relay === null
      ? html`<p>no relay set (agentmbx relay set URL)</p>`
      : html`<p class="relay relay-${view.relay.state}">relay <span class="url">${view.relay.url}</span> <code>${view.relay.fingerprint}</code>: <b>${view.relay.state}</b>${view.relay.cause === null ? '' : html` <span class="cause">${view.relay.cause}</span>`}</p>`;
  const peers = view.peers.map(
    (p) =>
      html`<li class="peer lan-${p.lan}" data-host="${p.host}"><b>${p.host}</b> <code>${p.fingerprint}</code> ${p.addr} · LAN <b>${p.lan}</b>${p.last_ok_at === null ? '' : html` (last answer <time>${p.last_ok_at}</time>)`}${p.enc_key ? '' : ' · no enc key yet'}${p.last_error === null ? '' : html` · <span class="error">${p.last_error}</span>`}</li>`,
  );
  const quarantine = view.quarantine.map(
    (
      q,
    ) => html`<li class="quarantined" data-seq="${q.seq}"><time>${q.at}</time> ${q.kind} ${q.item_id} from <code>${q.sender}</code> (seq ${q.seq}): <span class="reason">${q.reason}</span>
<form method="post" action="/dismiss"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="relay_url" value="${formValue(q.relay_url)}"><input type="hidden" name="epoch" value="${formValue(q.epoch)}"><input type="hidden" name="seq" value="${q.seq}"><button>dismiss</button></form></li>`,
  );
  const waiting = view.waiting.map(
    (
      w,
    ) => html`<li class="waiting" data-row="${w.row}">${w.kind} ${w.item_id} → ${w.peer_host}: ${w.attempts} attempt(s), queued <time>${w.queued_at}</time>, next try <time>${w.next_try_at}</time>${w.last_error === null ? '' : html` · <span class="error">${w.last_error}</span>`}
<form method="post" action="/retry"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="row" value="${w.row}"><button>retry now</button></form></li>`,
  );
  return html`<section id="peers"><h2>Peers and relay</h2>${relay}${view.peers.length === 0 ? html`<p class="empty">no paired host</p>` : html`<ul>${peers}</ul>`}</section>
${section('quarantine', 'Relay quarantine', html`<ul>${quarantine}</ul>`, 'nothing quarantined', view.quarantine.length)}
${section('waiting', 'Waiting in the outbox', html`<ul>${waiting}</ul>`, 'nothing waiting', view.waiting.length)}`;
}

/** The part of the page that follows the store: fetched again on every change. */
export function livePart(view: OwnerView, req: PageRequest): SafeHtml {
  return html`${req.error === null ? '' : html`<p class="failure" role="alert">${req.error}</p>`}
${mailboxList(view)}
${req.opened === null ? '' : html`<section id="opened"><h2>Message</h2>${message(req.opened, req)}</section>`}
${
  req.found === null
    ? ''
    : section(
        'search',
        `Search: ${req.query ?? ''}`,
        req.found.map((m) => message(m, req)),
        'nothing found',
        req.found.length,
      )
}
${section(
  'threads',
  view.agent === null ? 'Threads, newest first' : `Threads of ${view.agent}, newest first`,
  view.threads.map((t) => html`<div class="thread" data-thread="${t.thread}">${t.messages.map((m) => message(m, req))}</div>`),
  'no mail yet',
  view.threads.length,
)}
${section(
  'alerts',
  'Alerts and bounces',
  view.alerts.map((m) => message(m, req)),
  'no alerts',
  view.alerts.length,
)}
${guardSection(view, req.csrf)}
${plumbing(view, req.csrf)}`;
}

/** The whole document. */
export function fullPage(view: OwnerView, req: PageRequest): SafeHtml {
  const kinds = ENVELOPE_KINDS.map((k) => html`<option${k === 'message' ? html` selected` : ''}>${k}</option>`);
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentmbx · ${view.host}</title><link rel="stylesheet" href="/assets/ui.css"><script src="/assets/ui.js" defer></script></head>
<body><header><h1>agentmbx · <span class="host">${view.host}</span></h1> <code>${view.fingerprint}</code> <span id="liveness" class="offline">not live</span></header>
<div class="columns"><aside>
<form class="search" method="get" action="/"><input type="hidden" name="agent" value="${req.agent ?? ''}"><input type="search" name="q" placeholder="search mail" value="${req.query ?? ''}"><button>search</button></form>
<form class="write" method="post" action="/send"><h2>Write as owner</h2><input type="hidden" name="csrf" value="${req.csrf}">
<label>to <input name="to" required placeholder="agent, agent@host, role:r, *" value="${req.agent !== null && req.agent !== 'owner' ? req.agent : ''}"></label>
<label>kind <select name="kind">${kinds}</select></label>
<label>subject <input name="subject" required maxlength="200"></label>
<label>body <textarea name="body" rows="6"></textarea></label>
<button>send from owner@${view.host}</button></form>
</aside><main id="live">${livePart(view, req)}</main></div></body></html>`;
}
