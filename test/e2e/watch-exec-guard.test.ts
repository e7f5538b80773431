// Two agents that answer each other automatically through `watch --exec`, on the real CLI: each
// run replies to the mail it was woken for, until the loop guard stops the wakes at its budget. The
// mail is still delivered, the owner gets one alert, doctor and `guard list` show the thread, and
// `guard resume` lifts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLI_BIN, runCli, spawnCli, type Child } from '../helpers/processes.ts';
import { waitUntil } from '../helpers/wait.ts';
import { cli, cliJson, E2E_TIMEOUT_MS, inboxMessages, newCliHost, type CliHost } from './host-helpers.ts';

function answering(host: CliHost, agent: string, other: string): Child {
  // each run answers every message it was woken for, in its thread
  const command = `for id in $MBX_MESSAGE_IDS; do '${CLI_BIN}' send --from ${agent} --to ${other} --subject "re from ${agent}" --reply-to "$id" --body "$MBX_COUNT" >/dev/null || exit 1; done`;
  return spawnCli(['watch', '--agent', agent, '--exec', command, '--debounce', '50ms', '--json'], { env: { ...process.env, ...host.env } });
}

test("watch --exec ping-pong: wakes stop at the loop guard's budget, every message delivered, the owner alerted once", {
  timeout: E2E_TIMEOUT_MS,
}, async () => {
  const host = await newCliHost('pp', ['ann', 'bo']);
  await cli(host, ['guard', 'config', '--budget', '4', '--window', '10m']);
  const ann = answering(host, 'ann', 'bo');
  const bo = answering(host, 'bo', 'ann');
  try {
    // no need to wait for the watchers: the exec path's cursor is durable, mail sent before they look is run for
    const root = (await cli(host, ['send', '--from', 'bo', '--to', 'ann', '--subject', 'ping', '--body', 'start'])).trim();
    // bo 1 → ann 2 → bo 3 → ann 4 → bo 5: the 5th of the pair passes the budget of 4
    let alert: { subject: string; thread: string } | undefined;
    await waitUntil("the owner's loop guard alert", 120_000, async () => {
      alert = (await inboxMessages<{ kind: string; subject: string; thread: string }>(host, 'owner')).find((m) => m.kind === 'alert');
      return alert === undefined ? 'no alert yet' : null;
    });
    assert.equal(alert?.subject, `loop guard: wakes stopped for thread ${root}`);
    assert.equal(alert?.thread, root);
    // ann's watcher looked at the 5th and recorded it held: nothing more is sent after this
    await waitUntil("ann's watcher to record the 5th message held", 60_000, async () => {
      const fromBo = (await cliJson<{ messages: Array<{ id: string }> }>(host, ['inbox', '--agent', 'ann', '--all'])).messages;
      const last = fromBo.at(-1);
      if (fromBo.length < 3 || last === undefined) return `${fromBo.length} messages to ann`;
      const wake = (await cliJson<{ recipients: Array<{ wake: string }> }>(host, ['status', last.id])).recipients[0]?.wake ?? '';
      return wake.startsWith('none (held by the loop guard') ? null : `wake of the last: ${wake}`;
    });
    const annMail = await cliJson<{ total: number }>(host, ['inbox', '--agent', 'ann', '--all']);
    const boMail = await cliJson<{ total: number }>(host, ['inbox', '--agent', 'bo', '--all']);
    assert.deepEqual([annMail.total, boMail.total], [3, 2], 'all five delivered: bo wrote 3 to ann, ann 2 to bo');
    const runs = ann
      .stdout()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { exit: number; messages: string[]; duration_ms: number });
    assert.deepEqual(
      runs.map((r) => [r.exit, r.messages.length]),
      [
        [0, 1],
        [0, 1],
      ],
      'ann ran twice, once per message it was woken for',
    );
    assert.ok(runs.every((r) => r.duration_ms >= 0));
    const list = await cliJson<{ budget: number; held: Array<{ thread: string; count: number }> }>(host, ['guard', 'list']);
    assert.deepEqual([list.budget, list.held.map((h) => [h.thread, h.count])], [4, [[root, 5]]]);
    // doctor's verdict depends on more than the guard (no daemon runs here): its lines are what counts
    const doctor = JSON.parse((await runCli(['doctor', '--json'], host.env)).stdout) as { checks: Array<{ check: string; level: string; detail: string }> };
    const line = doctor?.checks.find((c) => c.check === `loop guard ${root}`);
    assert.equal(line?.level, 'warn');
    assert.match(line?.detail ?? '', /agentmbx guard resume/);
    await cli(host, ['guard', 'resume', root]);
    assert.deepEqual((await cliJson<{ held: unknown[] }>(host, ['guard', 'list'])).held, []);
  } finally {
    ann.kill();
    bo.kill();
  }
});
