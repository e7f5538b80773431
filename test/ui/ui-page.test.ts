// The owner's page as HTML, from a real store: the wake-up and loop-guard parts escape every
// sender-controlled string (a thread id, the pair, a held reason) as the rest of the page does, and
// the resume form carries the thread exactly, so `guard resume`'s operation finds it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ownerView } from '../../src/host/owner-view.ts';
import { sendMail } from '../../src/host/send.ts';
import { resumeThread } from '../../src/host/wake/loop-guard.ts';
import { livePart } from '../../src/ui/ui-page.ts';
import { makeHost } from '../host/fixtures.ts';
import { TestClock } from '../helpers/clock.ts';

const HOSTILE = '<img src=x onerror=alert(1)>\u202eevil"\'&';

function unescapeAttribute(text: string): string {
  return text.replace(/&(lt|gt|quot|#39|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e] ?? '');
}

test('held threads, pairs and wake reasons render as text, and the resume form gives back the exact thread', () => {
  const clock = new TestClock();
  const a = makeHost('alpha', clock, ['ann', 'al']);
  const { id } = sendMail(a, { from: 'al', to: ['ann'], subject: 'ping', body: 'x' });
  // what a hostile peer's thread id would leave in the guard's table and the wake outcomes
  a.store.wake.insertTrip({ thread: HOSTILE, pair: `<b>x</b>@beta <-> ann@alpha`, count: 5, msg_id: id, msg_row: 1, tripped_at: clock.now });
  a.store.wake.recordOutcome({ msg_id: id, agent: 'ann', path: 'exec', woke: 0, detail: `held: thread ${HOSTILE}`, at: clock.now });
  const page = livePart(ownerView(a, null), { agent: null, query: null, opened: null, found: null, error: null, csrf: 'token' }).text;

  assert.ok(!/<img|<b>x/.test(page), 'no sender text became markup');
  assert.equal(page.split('\u202e').length, 2, 'the raw bidi override is only in the hidden form value (never shown)');
  assert.match(page, /<code class="thread">&lt;img src=x onerror=alert\(1\)&gt;\\u202eevil&quot;&#39;&amp;<\/code>/, 'the thread shown as the CLI shows it');
  assert.match(page, /<span class="pair">&lt;b&gt;x&lt;\/b&gt;@beta &lt;-&gt; ann@alpha<\/span>/);
  assert.match(
    page,
    /<span class="wake" data-wake="[^"]*">woken: none \(held: thread &lt;img src=x onerror=alert\(1\)&gt;\\u202eevil&quot;&#39;&amp;\)<\/span>/,
  );
  assert.match(page, /<b class="messages">30<\/b> messages per thread and agent pair in <b class="window">10 min<\/b>/);
  const value = /<input type="hidden" name="thread" value="([^"]*)">/.exec(page)?.[1] ?? assert.fail('no resume form');
  assert.equal(unescapeAttribute(value), HOSTILE);
  assert.equal(resumeThread(a, unescapeAttribute(value)).thread, HOSTILE, "the form's value is the thread the guard holds");
});
