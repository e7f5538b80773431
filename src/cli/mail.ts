// Agents and mail: agents, agents add, send, inbox (also waiting for mail), watch, read, ack, status.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { withNode } from './host-common.ts';
import { printJson, printJsonLine, printResult } from './output.ts';
import { messageId, parseDuration, positiveInteger } from './parse-args.ts';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';
import { escapeInLine as inLine, escapeUnshowable as shown } from '../common/terminal-text.ts';
import { ensureAgent, messageText, messageView, visibleMessage } from '../host/agent-mail.ts';
import { ackMessage, checkMailbox, inboxPage, INBOX_PAGE_MAX, needsReply, readMessage, type InboxQuery } from '../host/mailbox.ts';
import { MAIL_WAIT_MAX_MS, waitForUnread, watchDeliveries } from '../host/mail-watch.ts';
import { wakeDaemon } from '../host/daemon-wake.ts';
import { localAddress, type HostNode } from '../host/node.ts';
import { messageStatus } from '../host/receipts.ts';
import { outboxOverview } from '../host/outbox.ts';
import { OWNER } from '../host/route.ts';
import { sendMail } from '../host/send.ts';

/** Rows `inbox` shows unless --limit says otherwise. */
export const INBOX_DEFAULT_LIMIT = 50;

/** Seconds (a plain number) or a duration such as 30s, 10m, 2h. */
function parseTimeout(text: string): number {
  return /^\d+$/.test(text.trim()) ? Number(text) * 1000 : parseDuration(text);
}

/** Waits until `agent` has unread mail or `timeoutMs` passed (no timeout: until mail comes). */
async function waitForMail(node: HostNode, agent: string, timeoutMs: number | null): Promise<void> {
  checkMailbox(node, agent);
  const deadline = timeoutMs === null ? null : node.nowMs() + timeoutMs;
  for (;;) {
    const left = deadline === null ? MAIL_WAIT_MAX_MS : deadline - node.nowMs();
    if (await waitForUnread(node, agent, left) || (deadline !== null && node.nowMs() >= deadline)) return;
  }
}

/** Resolves on the first SIGINT or SIGTERM. */
function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/** How long `send` waits for stdin to say something (or close) before it gives up, unless --stdin-timeout says otherwise. */
export const STDIN_IDLE_DEFAULT = '10s';
/** The longest --stdin-timeout (a day: a timer cannot be set much beyond 24 days anyway). */
export const STDIN_IDLE_MAX_MS = 86_400_000;

/**
 * The body from stdin, read until it closes, up to the envelope's body limit (a longer one is
 * refused, not cut). A stdin left open and silent for `idleMs` (an agent's shell tool often hands
 * its commands such a pipe) is refused instead of waited on for ever.
 */
async function readStdinBody(idleMs: number, idleText: string): Promise<string> {
  const stdin = process.stdin;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    return await new Promise<string>((resolve, reject) => {
      const idle = setTimeout(() => reject(new CliError(
        `no --body, and stdin stayed open with nothing more for ${idleText}: give --body TEXT, or pipe the body in and close stdin (echo hi | agentmbx send …); a slow writer gets longer with --stdin-timeout`,
        'USAGE')), idleMs);
      stdin.on('data', (chunk: Buffer) => {
        idle.refresh();
        size += chunk.length;
        if (size > MAX_BODY_BYTES) reject(new CliError(`the body is longer than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(chunk);
      });
      stdin.once('end', () => { clearTimeout(idle); resolve(Buffer.concat(chunks).toString('utf8')); });
      stdin.once('error', (error) => { clearTimeout(idle); reject(error); });
    });
  } finally {
    // a refused body leaves stdin open: let go of it, or the process would wait for its writer
    stdin.destroy();
  }
}

export function registerMailCommands(program: Command): void {
  const agents = program.command('agents')
    .description('list the agents (mailboxes) on this host')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => withNode((node) => {
      // the owner's mailbox is always there, though it is no agent row
      const list = [{ name: OWNER, role: null }, ...node.store.mail.agents().map((a) => ({ name: a.name, role: a.role }))]
        .sort((a, b) => a.name.localeCompare(b.name));
      if (opts.json === true) printJson(list);
      else for (const a of list) process.stdout.write(`${a.name}${a.role === null ? '' : `  role:${a.role}`}\n`);
    }));

  agents.command('add <name>')
    .description('add an agent (or set its role)')
    .option('--role <role>', 'a role others can address as role:<role>')
    .option('--description <text>', 'what the agent does (shown to other agents)')
    .option('--json', 'print JSON')
    // optsWithGlobals: `agents --json` is the parent's option too, and commander hands it to the parent
    .action((name: string, _local: unknown, command: Command) => withNode((node) => {
      const opts = command.optsWithGlobals<{ role?: string; description?: string; json?: boolean }>();
      const added = ensureAgent(node, name, { role: opts.role, description: opts.description });
      const text = added ? `added ${name}@${node.config.host}` : `${name} exists${opts.role === undefined ? '' : `; role set to ${opts.role}`}`;
      printResult(opts.json, { agent: `${name}@${node.config.host}`, added, role: node.store.mail.agent(name)?.role ?? null }, text);
    }));

  program.command('send')
    .description('send mail; prints the message id')
    .requiredOption('--from <agent>', 'the sending agent on this host')
    .requiredOption('--to <addresses>', 'comma-separated: name@host, name, role:<r>, *, owner')
    .requiredOption('--subject <text>', 'subject')
    .option('--body <text>', 'body (default: read from stdin until it closes; a terminal is refused)')
    .option('--stdin-timeout <duration>', `without --body: how long stdin may stay silent and open before send gives up (exit 2)`, STDIN_IDLE_DEFAULT)
    .option('--kind <kind>', 'message, request, reply, status, decision, alert or task', 'message')
    .option('--reply-to <id>', 'the message this answers')
    .option('--json', 'print JSON')
    .action((opts: { from: string; to: string; subject: string; body?: string; stdinTimeout: string; kind: string; replyTo?: string; json?: boolean }) => {
      // waiting for a body typed at a terminal looks like a hang to a person and to an agent's shell
      if (opts.body === undefined && process.stdin.isTTY === true) {
        throw new CliError('no --body, and stdin is a terminal: give --body TEXT, or pipe the body in (echo hi | agentmbx send …)', 'USAGE');
      }
      const stdinIdleMs = parseDuration(opts.stdinTimeout);
      if (stdinIdleMs < 1 || stdinIdleMs > STDIN_IDLE_MAX_MS) throw new CliError('--stdin-timeout must be from 1ms to 1d', 'USAGE');
      return withNode(async (node) => {
        const body = opts.body ?? await readStdinBody(stdinIdleMs, opts.stdinTimeout.trim());
        const to = opts.to.split(',').map((s) => s.trim()).filter((s) => s !== '');
        const sent = sendMail(node, { from: opts.from, to, subject: opts.subject, body, kind: opts.kind, replyTo: opts.replyTo ?? null });
        // committed: the daemon sends it now, not at its next tick
        if (sent.remoteHosts.length > 0) await wakeDaemon(node.home);
        if (opts.json === true) printJson({ id: sent.id, local: sent.localAgents, hosts: sent.remoteHosts });
        else process.stdout.write(`${sent.id}\n`);
      });
    });

  program.command('inbox')
    .description('an agent\'s unacked mail, oldest first, one page at a time')
    .requiredOption('--agent <name>', 'the agent')
    .option('--all', 'include acked mail')
    .option('--limit <n>', `rows in the page (default ${INBOX_DEFAULT_LIMIT}, at most ${INBOX_PAGE_MAX})`)
    .option('--after <id>', 'the oldest mail newer than this message (the next page)')
    .option('--before <id>', 'the newest mail older than this message (the page before)')
    .option('--newest', 'the newest mail (the last page)')
    .option('--with-body', 'include each body in --json')
    .option('--wait', 'first wait until the agent has unread mail')
    .option('--timeout <seconds>', 'with --wait: give up after this long (seconds, or e.g. 30s, 10m)')
    .option('--json', 'print JSON: {messages, total, more, next}')
    .action((opts: InboxOptions) => {
      const query = inboxQuery(opts);
      if (opts.timeout !== undefined && opts.wait !== true) throw new CliError('--timeout goes with --wait', 'USAGE');
      const timeoutMs = opts.timeout === undefined ? null : parseTimeout(opts.timeout);
      return withNode(async (node) => {
        if (opts.wait === true) await waitForMail(node, opts.agent, timeoutMs);
        const page = inboxPage(node, opts.agent, query);
        // the page's far end, in the direction it was taken (rows are oldest first either way)
        const next = !page.more ? null : 'after' in query.cursor ? { after: page.rows.at(-1)?.id ?? '' } : { before: page.rows[0]?.id ?? '' };
        if (opts.json === true) {
          const messages = page.rows.map((r) => messageView(node, r, opts.withBody === true));
          printJson({ messages, total: page.total, more: page.more, next });
          return;
        }
        if (page.rows.length === 0) process.stdout.write('no mail\n');
        for (const r of page.rows) process.stdout.write(`${r.id}  ${r.state.padEnd(9)}  ${inLine(r.from_addr)}  ${inLine(r.subject)}${needsReply(r) ? '  [needs reply]' : ''}\n`);
        // on stderr, so that stdout stays one line per message
        if (next !== null) {
          const flags = [opts.all === true ? '--all' : '', opts.limit === undefined ? '' : `--limit ${opts.limit}`, 'after' in next ? `--after ${next.after}` : `--before ${next.before}`];
          process.stderr.write(`agentmbx: ${page.rows.length} of ${page.total} shown; more: agentmbx inbox --agent ${opts.agent} ${flags.filter((f) => f !== '').join(' ')}\n`);
        }
      });
    });

  program.command('watch')
    .description('print a line for each new message to an agent as it lands (runs until stopped)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--json', 'one JSON object per line')
    .action((opts: { agent: string; json?: boolean }) => withNode(async (node) => {
      checkMailbox(node, opts.agent);
      const watch = watchDeliveries(node, opts.agent, (ids) => {
        for (const id of ids) {
          const m = messageView(node, visibleMessage(node, opts.agent, id), false);
          if (opts.json === true) printJsonLine(m);
          else process.stdout.write(`${m.id}  from ${inLine(m.from)} (${m.trust})  ${inLine(m.subject)}\n`);
        }
      });
      process.stderr.write(`watching the mail of ${localAddress(node, opts.agent)}\n`);
      await untilStopped();
      watch.stop();
    }));

  program.command('read <id>')
    .description('show a message (marks it read, unless --peek)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--peek', 'show it without marking it read (the sender is told nothing)')
    .option('--json', 'print JSON')
    .action((id: string, opts: { agent: string; peek?: boolean; json?: boolean }) => withNode((node) => {
      const m = messageView(node, readMessage(node, id, opts.agent, opts.peek === true));
      // a remote sender wrote the text: its control and bidi characters are shown escaped, never run
      if (opts.json === true) printJson(m);
      else process.stdout.write(`${shown(messageText(m))}\n`);
    }));

  program.command('ack <id>')
    .description('acknowledge a message (the sender sees it)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--note <text>', 'a short note for the sender')
    .option('--json', 'print JSON')
    .action((id: string, opts: { agent: string; note?: string; json?: boolean }) => withNode((node) => {
      const moved = ackMessage(node, id, opts.agent, opts.note ?? null);
      printResult(opts.json, { id, acked: true, already: !moved }, moved ? `acked ${id}` : `${id} was already acked`);
    }));

  program.command('status [id]')
    .description('per recipient, how far a message this host sent has got; without an id, the outbox per state')
    .option('--json', 'print JSON')
    .action((id: string | undefined, opts: { json?: boolean }) => withNode((node) => {
      if (id === undefined) {
        const overview = outboxOverview(node);
        if (opts.json === true) printJson(overview);
        else {
          // one line per kind: a message to two hosts is two envelopes, and receipts are not mail
          for (const [kind, states] of Object.entries(overview.outbox)) {
            const counts = Object.entries(states).map(([state, n]) => `${state} ${n}`).join(', ');
            process.stdout.write(`${`${kind}s`.padEnd(11)} ${counts === '' ? 'none' : counts}\n`);
          }
          const relay = overview.relay;
          if (relay !== null) process.stdout.write(`relay ${relay.url}: ${relay.state}${relay.state === 'ok' || relay.detail === null ? '' : ` (${relay.detail})`}\n`);
        }
        return;
      }
      const status = messageStatus(node, id);
      if (status === null) throw new CliError(`no message ${id} sent from this host`, 'NOT_FOUND');
      if (opts.json === true) printJson(status);
      else {
        for (const r of status.recipients) {
          process.stdout.write(`${r.recipient.padEnd(30)} ${r.state}${r.at === null ? '' : `  ${r.at}`}${r.via === null ? '' : `  via ${r.via}`}${r.note === null ? '' : `  ${inLine(r.note)}`}\n`);
        }
      }
    }));
}

interface InboxOptions {
  agent: string; all?: boolean; limit?: string; after?: string; before?: string; newest?: boolean; withBody?: boolean;
  wait?: boolean; timeout?: string; json?: boolean;
}

/** The page `inbox` asks for; at most one of --after, --before, --newest. */
function inboxQuery(opts: InboxOptions): Required<InboxQuery> {
  if ([opts.after, opts.before, opts.newest].filter((x) => x !== undefined).length > 1) {
    throw new CliError('use one of --after, --before and --newest', 'USAGE');
  }
  const limit = opts.limit === undefined ? INBOX_DEFAULT_LIMIT : positiveInteger(opts.limit, '--limit', INBOX_PAGE_MAX);
  const cursor = opts.after !== undefined ? { after: messageId(opts.after, '--after') }
    : opts.before !== undefined ? { before: messageId(opts.before, '--before') }
    : opts.newest === true ? { before: '' }
    : { after: '' };
  return { includeAcked: opts.all === true, limit, cursor };
}
