// `agentmbx guard list|resume|config`: the loop guard (src/host/wake/loop-guard.ts) for the owner.
import type { Command } from 'commander';
import { withNode } from './host-common.ts';
import { printJson, printResult } from './output.ts';
import { parseDuration, positiveInteger } from './parse-args.ts';
import { ageText } from '../common/time-text.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { GUARD_BUDGET_MAX, guardOverview, resumeThread, setGuardSettings } from '../host/wake/loop-guard.ts';

export function registerGuardCommands(program: Command): void {
  const guard = program.command('guard').description('the loop guard: threads whose wakes it stopped (agents writing each other without the owner)');

  guard
    .command('list')
    .description('threads the loop guard holds, and its budget')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) =>
      withNode((node) => {
        const overview = guardOverview(node.store);
        if (opts.json === true) {
          printJson(overview);
          return;
        }
        process.stdout.write(`budget: ${overview.budget} messages per thread and agent pair in ${ageText(overview.window_ms)} without the owner\n`);
        if (overview.held.length === 0) process.stdout.write('no thread held\n');
        // thread ids and addresses come from peers: shown escaped, as all sender text is
        for (const t of overview.held)
          process.stdout.write(`${inLine(t.thread)}  held since ${t.since}: ${inLine(t.pair)} wrote ${t.count} (agentmbx guard resume ${inLine(t.thread)})\n`);
      }),
    );

  guard
    .command('resume <thread>')
    .description('let wakes for the thread go on (a thread id, or any message id in it); counting starts afresh')
    .option('--json', 'print JSON')
    .action((thread: string, opts: { json?: boolean }) =>
      withNode((node) => {
        const trip = resumeThread(node, thread);
        printResult(opts.json, { thread: trip.thread, resumed: true }, `wakes for thread ${trip.thread} go on`);
      }),
    );

  guard
    .command('config')
    .description('show or set the budget and window')
    .option('--budget <n>', `messages a pair of agents may write in a thread inside the window (1-${GUARD_BUDGET_MAX})`)
    .option('--window <duration>', 'the window, e.g. 10m (1s-7d)')
    .option('--json', 'print JSON')
    .action((opts: { budget?: string; window?: string; json?: boolean }) =>
      withNode((node) => {
        const settings = setGuardSettings(node.store, {
          ...(opts.budget === undefined ? {} : { budget: positiveInteger(opts.budget, '--budget', GUARD_BUDGET_MAX) }),
          ...(opts.window === undefined ? {} : { windowMs: parseDuration(opts.window) }),
        });
        printResult(
          opts.json,
          { budget: settings.budget, window_ms: settings.windowMs },
          `loop guard: ${settings.budget} messages per thread and agent pair in ${ageText(settings.windowMs)}`,
        );
      }),
    );
}
