// The owner's page, live: on every "change" the server streams, the live part is fetched again and
// put in place (no reload; the server escaped every value in it). Without JavaScript the page still
// shows everything, as of when it was loaded.
'use strict';
(() => {
  const live = document.getElementById('live');
  const liveness = document.getElementById('liveness');
  if (live === null || typeof EventSource === 'undefined') return;
  let busy = false;
  let again = false;

  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const answer = await fetch(location.pathname + location.search, { headers: { 'X-Mbx-Fragment': '1' }, credentials: 'same-origin' });
      if (answer.ok) live.innerHTML = await answer.text();
    } catch {
      // the next change, or the stream's reconnect, tries again
    } finally {
      busy = false;
      if (again) {
        again = false;
        void refresh();
      }
    }
  }

  const events = new EventSource('/events');
  events.addEventListener('open', () => {
    liveness.textContent = 'live';
    liveness.className = 'online';
    // whatever changed while the stream was down
    void refresh();
  });
  events.addEventListener('error', () => {
    liveness.textContent = 'not live (reconnecting)';
    liveness.className = 'offline';
  });
  events.addEventListener('change', () => void refresh());
})();
