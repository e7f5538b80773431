// Agents and mail: agents, agents add, send, inbox (also waiting for mail), watch, read, ack, thread, search, status.
import { Option, type Command } from 'commander';
import { CliError } from './cli-error.ts';
import { bodyFromBytes, readBodyFile } from './body-input.ts';
import { withNode } from './host-common.ts';
import { printJson, printJsonLine, printResult } from './output.ts';
import { messageId, parseDuration, positiveInteger } from './parse-args.ts';
import { MAX_BODY_BYTES, MAX_REFS } from '../protocol/records/envelope.ts';
import { escapeInLine as inLine, escapeUnshowable as shown } from '../common/terminal-text.ts';
import { ensureAgent, messageText, messageView, searchMail, SEARCH_MAX, threadOf, visibleMessage } from '../host/agent-mail.ts';
import { directory, directoryLine } from '../host/directory/directory.ts';
import { ackMessage, checkMailbox, inboxPage, INBOX_PAGE_MAX, needsReply, readMessage, type InboxQuery } from '../host/mailbox.ts';
import { MAIL_WAIT_MAX_MS, waitForUnread, watchDeliveries } from '../host/mail-watch.ts';
import { agentHolding, resolveMessageId } from '../host/message-ids.ts';
import { wakeDaemon } from '../host/daemon-wake.ts';
import { localAddress, type HostNode } from '../host/core/node.ts';
import { failedRecipients, messageStatus } from '../host/core/receipts.ts';
import { outboxOverview } from '../host/outbox.ts';
import { OWNER } from '../host/core/route.ts';
import { sendMail } from '../host/send.ts';
import { withLanProbe } from '../host/lan-probe.ts';
import { EXEC_DEBOUNCE_DEFAULT_MS, EXEC_TIMEOUT_DEFAULT_MS } from '../host/wake/exec-runner.ts';
import { watchExec } from './watch-exec.ts';

/** Rows `inbox` shows unless --limit says otherwise. */
export const INBOX_DEFAULT_LIMIT = 50;

/** Seconds (a plain number) or a duration such as 30s, 10m, 2h. */
function parseTimeout(text: string): number {
  return /^\d+$/.test(text.trim()) ? Number(text) * 1000 : parseDuration(text);
}

/** Waits until `agent` has unread mail (true) or `timeoutMs` passed (false; no timeout: until mail comes). */
async function waitForMail(node: HostNode, agent: string, timeoutMs: number | null): Promise<boolean> {
  checkMailbox(node, agent);
  const deadline = timeoutMs === null ? null : node.nowMs() + timeoutMs;
  for (;;) {
    const left = deadline === null ? MAIL_WAIT_MAX_MS : deadline - node.nowMs();
    if (await waitForUnread(node, agent, left)) return true;
    if (deadline !== null && node.nowMs() >= deadline) return false;
  }
}

/** --agent, which $MBX_AGENT gives when it is not on the command line. */
export function agentOption(mandatory = true): Option {
  const option = new Option('--agent <name>', mandatory ? 'the agent' : 'the agent (default: the one agent of this host that holds the message)').env(
    'MBX_AGENT',
  );
  return mandatory ? option.makeOptionMandatory() : option;
}

/** The message `typed` names (any case, or a unique prefix) and the agent acting on it: --agent, or the one agent holding it. */
function messageOfAgent(node: HostNode, typed: string, agent: string | undefined): { id: string; agent: string } {
  if (agent !== undefined) return { id: resolveMessageId(node, typed, agent), agent };
  const id = resolveMessageId(node, typed, null);
  return { id, agent: agentHolding(node, id) };
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
async function readStdinBody(idleMs: number, idleText: string): Promise<Buffer> {
  const stdin = process.stdin;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      const idle = setTimeout(
        () =>
          reject(
            new CliError(
              `no --body, and stdin stayed open with nothing more for ${idleText}: give --body TEXT, or pipe the body in and close stdin (echo hi | agentmbx send …); a slow writer gets longer with --stdin-timeout`,
              'USAGE',
            ),
          ),
        idleMs,
      );
      stdin.on('data', (chunk: Buffer) => {
        idle.refresh();
        size += chunk.length;
        if (size > MAX_BODY_BYTES) reject(new CliError(`the body is longer than ${MAX_BODY_BYTES} bytes`));
        else chunks.push(chunk);
      });
      stdin.once('end', () => {
        clearTimeout(idle);
        resolve(Buffer.concat(chunks));
      });
      stdin.once('error', (error) => {
        clearTimeout(idle);
        reject(error);
      });
    });
  } finally {
    // a refused body leaves stdin open: let go of it, or the process would wait for its writer
    stdin.destroy();
  }
}

export function registerMailCommands(program: Command): void {
  const agents = program
    .command('agents')
    .description('list the agents (mailboxes) on this host; with --all also the agents of paired hosts')
    .option('--all', 'also list the agents of paired hosts (their directories, and senders seen in mail), as mbx_agents does')
    .option('--json', 'print JSON')
    .action((opts: { all?: boolean; json?: boolean }) =>
      withNode((node) => {
        if (opts.all === true) {
          const entries = directory(node);
          if (opts.json === true) printJson(entries);
          else process.stdout.write(entries.length === 0 ? 'no agents\n' : entries.map((e) => `${inLine(directoryLine(e))}\n`).join(''));
          return;
        }
        // the owner's mailbox is always there, though it is no agent row
        const list = [
          { name: OWNER, role: null, description: null },
          ...node.store.mail.agents().map((a) => ({
            name: a.name,
            role: a.role,
            description: node.store.agentMail.description(a.name),
          })),
        ].sort((a, b) => a.name.localeCompare(b.name));
        if (opts.json === true) printJson(list);
        else
          for (const a of list)
            process.stdout.write(`${a.name}${a.role === null ? '' : `  role:${a.role}`}${a.description === null ? '' : `  ${inLine(a.description)}`}\n`);
      }),
    );

  agents
    .command('add <name>')
    .description('add an agent, or set the role and description of one')
    .option('--role <role>', 'a role others can address as role:<role>')
    .option('--description <text>', 'what the agent does (shown to other agents)')
    .option('--json', 'print JSON')
    // optsWithGlobals: `agents --json` is the parent's option too, and commander hands it to the parent
    .action((name: string, _local: unknown, command: Command) =>
      withNode((node) => {
        const opts = command.optsWithGlobals<{ role?: string; description?: string; json?: boolean }>();
        const added = ensureAgent(node, name, { role: opts.role, description: opts.description });
        const set = [opts.role === undefined ? '' : `role set to ${opts.role}`, opts.description === undefined ? '' : 'description set'].filter(
          (x) => x !== '',
        );
        const text = added ? `added ${name}@${node.config.host}` : set.length > 0 ? `updated ${name}: ${set.join(', ')}` : `${name} exists (nothing to change)`;
        printResult(
          opts.json,
          {
            agent: `${name}@${node.config.host}`,
            added,
            updated: !added && set.length > 0,
            role: node.store.mail.agent(name)?.role ?? null,
            description: node.store.agentMail.description(name),
          },
          text,
        );
      }),
    );

  program
    .command('send')
    .description('send mail; prints the message id')
    .addOption(new Option('--from <agent>', 'the sending agent on this host').env('MBX_AGENT').makeOptionMandatory())
    .requiredOption('--to <addresses>', 'comma-separated: name@host, name, role:<r>, *, owner')
    .requiredOption('--subject <text>', 'subject')
    .option('--body <text>', 'body (default: read from stdin until it closes; a terminal is refused)')
    .option('--body-file <file>', 'read the body from this file (UTF-8 text, or any file with --base64)')
    .option('--base64', 'send the bytes of stdin or --body-file as base64 text (for a file that is not UTF-8 text)')
    .option('--stdin-timeout <duration>', `without --body: how long stdin may stay silent and open before send gives up (exit 2)`, STDIN_IDLE_DEFAULT)
    .option('--kind <kind>', 'message, request, reply, status, decision, alert or task', 'message')
    .option('--reply-to <id>', 'the message this answers (its id in any case, or a unique prefix of 8 or more characters)')
    .option('--needs-reply', 'ask the recipients to answer (default: only for --kind request)')
    .option('--no-needs-reply', 'do not ask for an answer, even for a request')
    .option(
      '--refs <list>',
      `comma-separated references: URLs, paths, commit ids (may be given again; at most ${MAX_REFS})`,
      (v: string, prev: string[] = []) => [
        ...prev,
        ...v
          .split(',')
          .map((r) => r.trim())
          .filter((r) => r !== ''),
      ],
    )
    .option('--allow-empty', 'send an empty body (refused otherwise: an empty stdin is most often a mistake)')
    .option('--json', 'print JSON')
    .action((opts: SendOptions) => {
      const to = opts.to
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (to.length === 0) throw new CliError('--to is empty: give one or more addresses, comma-separated (name, name@host, role:<role>, *, owner)', 'USAGE');
      // waiting for a body typed at a terminal looks like a hang to a person and to an agent's shell
      if (opts.body !== undefined && (opts.bodyFile !== undefined || opts.base64 === true)) {
        throw new CliError('--body is the text itself: use it without --body-file and --base64', 'USAGE');
      }
      if (opts.body === undefined && opts.bodyFile === undefined && process.stdin.isTTY === true) {
        throw new CliError('no --body, and stdin is a terminal: give --body TEXT, or pipe the body in (echo hi | agentmbx send …)', 'USAGE');
      }
      const stdinIdleMs = parseDuration(opts.stdinTimeout);
      if (stdinIdleMs < 1 || stdinIdleMs > STDIN_IDLE_MAX_MS) throw new CliError('--stdin-timeout must be from 1ms to 1d', 'USAGE');
      return withNode(async (node) => {
        const body =
          opts.body ??
          bodyFromBytes(
            opts.bodyFile === undefined ? await readStdinBody(stdinIdleMs, opts.stdinTimeout.trim()) : readBodyFile(opts.bodyFile),
            opts.bodyFile ?? 'stdin',
            opts.base64 === true,
          );
        if (body.trim() === '' && opts.allowEmpty !== true) {
          const source = opts.body !== undefined ? '' : opts.bodyFile === undefined ? ' (stdin gave nothing)' : ` (${opts.bodyFile} is empty)`;
          throw new CliError(`the body is empty${source}: give --body TEXT or pipe the body in; --allow-empty sends it anyway`, 'USAGE');
        }
        const replyTo = opts.replyTo === undefined ? null : resolveMessageId(node, opts.replyTo, opts.from);
        const sent = sendMail(
          node,
          await withLanProbe(node, {
            from: opts.from,
            to,
            subject: opts.subject,
            body,
            kind: opts.kind,
            replyTo,
            ...(opts.needsReply === undefined ? {} : { needsReply: opts.needsReply }),
            ...(opts.refs === undefined ? {} : { refs: opts.refs }),
          }),
        );
        // committed: the daemon sends it now, not at its next tick
        if (sent.remoteHosts.length > 0) await wakeDaemon(node.home);
        if (opts.json === true) printJson({ id: sent.id, local: sent.localAgents, hosts: sent.remoteHosts });
        else process.stdout.write(`${sent.id}\n`);
      });
    });

  program
    .command('inbox')
    .description("an agent's unacked mail, oldest first, one page at a time")
    .addOption(agentOption())
    .option('--all', 'include acked mail')
    .option('--limit <n>', `rows in the page (default ${INBOX_DEFAULT_LIMIT}, at most ${INBOX_PAGE_MAX})`)
    .option('--after <id>', 'the oldest mail newer than this message (the next page)')
    .option('--before <id>', 'the newest mail older than this message (the page before)')
    .option('--newest', 'the newest mail (the last page)')
    .option('--with-body', 'include each body in --json')
    .option('--wait', 'first wait until the agent has unread mail')
    .option(
      '--timeout <seconds>',
      'with --wait: give up after this long (seconds, or e.g. 30s, 10m): nothing on stdout ({"timed_out": true} with --json), exit 7',
    )
    .option('--json', 'print JSON: {messages, total, more, next}')
    .action((opts: InboxOptions) => {
      const query = inboxQuery(opts);
      if (opts.timeout !== undefined && opts.wait !== true) throw new CliError('--timeout goes with --wait', 'USAGE');
      const timeoutMs = opts.timeout === undefined ? null : parseTimeout(opts.timeout);
      return withNode(async (node) => {
        if (opts.wait === true && !(await waitForMail(node, opts.agent, timeoutMs))) {
          // nothing on stdout (or {"timed_out": true} with --json) and exit 7: a script tells it from mail
          if (opts.json === true)
            printJson({ timed_out: true, messages: [], total: node.store.mail.inboxCount(opts.agent, opts.all === true), more: false, next: null });
          throw new CliError(`no new mail for ${opts.agent} within ${(timeoutMs ?? 0) / 1000} s`, 'TIMED_OUT', true);
        }
        const page = inboxPage(node, opts.agent, query);
        // the page's far end, in the direction it was taken (rows are oldest first either way)
        const next = !page.more ? null : 'after' in query.cursor ? { after: page.rows.at(-1)?.id ?? '' } : { before: page.rows[0]?.id ?? '' };
        if (opts.json === true) {
          const messages = page.rows.map((r) => messageView(node, r, opts.withBody === true));
          printJson({ ...(opts.wait === true ? { timed_out: false } : {}), messages, total: page.total, more: page.more, next });
          return;
        }
        if (page.rows.length === 0) process.stdout.write('no mail\n');
        for (const r of page.rows)
          process.stdout.write(`${r.id}  ${r.state.padEnd(9)}  ${inLine(r.from_addr)}  ${inLine(r.subject)}${needsReply(r) ? '  [needs reply]' : ''}\n`);
        // on stderr, so that stdout stays one line per message
        if (next !== null) {
          const flags = [
            opts.all === true ? '--all' : '',
            opts.limit === undefined ? '' : `--limit ${opts.limit}`,
            'after' in next ? `--after ${next.after}` : `--before ${next.before}`,
          ];
          process.stderr.write(
            `agentmbx: ${page.rows.length} of ${page.total} shown; more: agentmbx inbox --agent ${opts.agent} ${flags.filter((f) => f !== '').join(' ')}\n`,
          );
        }
      });
    });

  program
    .command('watch')
    .description('print a line for each new message to an agent as it lands, or with --exec run a command for it (runs until stopped)')
    .addOption(agentOption())
    .option('--exec <command>', 'run this shell command for new mail: the messages as JSON on stdin, MBX_MESSAGE_IDS etc. in its environment (docs/agents.md)')
    .option('--debounce <duration>', 'with --exec: wait this long after new mail for more to join the run', `${EXEC_DEBOUNCE_DEFAULT_MS}ms`)
    .option('--exec-timeout <duration>', 'with --exec: end a run that takes longer (its whole process group)', `${EXEC_TIMEOUT_DEFAULT_MS / 60_000}m`)
    .option('--json', 'one JSON object per line')
    .action((opts: { agent: string; exec?: string; debounce: string; execTimeout: string; json?: boolean }) =>
      withNode(async (node) => {
        checkMailbox(node, opts.agent);
        if (opts.exec !== undefined) {
          const command = opts.exec;
          if (command.trim() === '') throw new CliError('--exec needs a command', 'USAGE');
          const debounceMs = parseDuration(opts.debounce);
          const timeoutMs = parseDuration(opts.execTimeout);
          if (timeoutMs < 1) throw new CliError('--exec-timeout must be at least 1ms', 'USAGE');
          await watchExec(node, { agent: opts.agent, command, debounceMs, timeoutMs, json: opts.json === true }, untilStopped());
          return;
        }
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
      }),
    );

  program
    .command('read <id>')
    .description('show a message (marks it read, unless --peek); the id in any case, or a unique prefix of 8 or more characters')
    .addOption(agentOption(false))
    .option('--peek', 'show it without marking it read (the sender is told nothing)')
    .option('--json', 'print JSON')
    .action((typed: string, opts: { agent?: string; peek?: boolean; json?: boolean }) =>
      withNode((node) => {
        const { id, agent } = messageOfAgent(node, typed, opts.agent);
        const m = messageView(node, readMessage(node, id, agent, opts.peek === true));
        // a remote sender wrote the text: its control and bidi characters are shown escaped, never run
        if (opts.json === true) printJson(m);
        else process.stdout.write(`${shown(messageText(m))}\n`);
      }),
    );

  program
    .command('ack <id>')
    .description('acknowledge a message (the sender sees it); the id as read takes it')
    .addOption(agentOption(false))
    .option('--note <text>', 'a short note for the sender')
    .option('--json', 'print JSON')
    .action((typed: string, opts: { agent?: string; note?: string; json?: boolean }) =>
      withNode((node) => {
        const { id, agent } = messageOfAgent(node, typed, opts.agent);
        const moved = ackMessage(node, id, agent, opts.note ?? null);
        printResult(opts.json, { id, acked: true, already: !moved }, moved ? `acked ${id}` : `${id} was already acked`);
      }),
    );

  program
    .command('thread <id>')
    .description('every message of the conversation a message belongs to that the agent sent or received, oldest first')
    .addOption(agentOption(false))
    .option('--json', 'print JSON: {thread, messages}')
    .action((typed: string, opts: { agent?: string; json?: boolean }) =>
      withNode((node) => {
        const { id, agent } = messageOfAgent(node, typed, opts.agent);
        const messages = threadOf(node, agent, id);
        if (opts.json === true) printJson({ thread: messages[0]?.thread ?? id, messages });
        else process.stdout.write(`${messages.map((m) => shown(messageText(m))).join('\n\n---\n\n')}\n`);
      }),
    );

  program
    .command('search <words...>')
    .description('full-text search over the subjects and bodies of the mail an agent sent or received; best matches first')
    .addOption(agentOption())
    .option('--limit <n>', `at most this many (default and most ${SEARCH_MAX})`)
    .option('--json', 'print JSON: {messages} (with bodies)')
    .action((words: string[], opts: { agent: string; limit?: string; json?: boolean }) =>
      withNode((node) => {
        const limit = opts.limit === undefined ? SEARCH_MAX : positiveInteger(opts.limit, '--limit', SEARCH_MAX);
        const messages = searchMail(node, opts.agent, words.join(' '), limit);
        if (opts.json === true) printJson({ messages });
        else if (messages.length === 0) process.stdout.write('nothing found\n');
        else for (const m of messages) process.stdout.write(`${m.id}  ${(m.state ?? 'sent').padEnd(9)}  ${inLine(m.from)}  ${inLine(m.subject)}\n`);
      }),
    );

  program
    .command('status [id]')
    .description(
      'per recipient, how far a message this host sent has got (exit 1 when a copy ended rejected, undelivered, expired or unconfirmed); without an id, the outbox per state',
    )
    .option('--json', 'print JSON')
    .action((typed: string | undefined, opts: { json?: boolean }) =>
      withNode((node) => {
        if (typed === undefined) {
          const overview = outboxOverview(node);
          if (opts.json === true) printJson(overview);
          else {
            // one line per kind: a message to two hosts is two envelopes, and receipts are not mail
            for (const [kind, states] of Object.entries(overview.outbox)) {
              const counts = Object.entries(states)
                .map(([state, n]) => `${state} ${n}`)
                .join(', ');
              process.stdout.write(`${`${kind}s`.padEnd(11)} ${counts === '' ? 'none' : counts}\n`);
            }
            const relay = overview.relay;
            if (relay !== null)
              process.stdout.write(`relay ${relay.url}: ${relay.state}${relay.state === 'ok' || relay.detail === null ? '' : ` (${relay.detail})`}\n`);
          }
          return;
        }
        const id = resolveMessageId(node, typed, null);
        const status = messageStatus(node, id);
        if (status === null) throw new CliError(`no message ${id} sent from this host`, 'NOT_FOUND');
        if (opts.json === true) printJson(status);
        else {
          for (const r of status.recipients) {
            process.stdout.write(
              `${r.recipient.padEnd(30)} ${r.state}${r.at === null ? '' : `  ${r.at}`}${r.via === null ? '' : `  via ${r.via}`}${r.wake === null ? '' : `  woken: ${inLine(r.wake)}`}${r.note === null ? '' : `  ${inLine(r.note)}`}\n`,
            );
          }
        }
        // like `gh run view --exit-status`: a script sees a copy that ended undelivered without parsing
        const failed = failedRecipients(status);
        if (failed.length > 0)
          throw new CliError(`${failed.length} copy(ies) of ${id} ended ${[...new Set(failed.map((r) => r.state))].join(', ')}`, 'FAILURE', true);
      }),
    );
}

interface SendOptions {
  from: string;
  to: string;
  subject: string;
  body?: string;
  bodyFile?: string;
  base64?: boolean;
  stdinTimeout: string;
  kind: string;
  replyTo?: string;
  needsReply?: boolean;
  refs?: string[];
  allowEmpty?: boolean;
  json?: boolean;
}

interface InboxOptions {
  agent: string;
  all?: boolean;
  limit?: string;
  after?: string;
  before?: string;
  newest?: boolean;
  withBody?: boolean;
  wait?: boolean;
  timeout?: string;
  json?: boolean;
}

/** The page `inbox` asks for; at most one of --after, --before, --newest. */
function inboxQuery(opts: InboxOptions): Required<InboxQuery> {
  if ([opts.after, opts.before, opts.newest].filter((x) => x !== undefined).length > 1) {
    throw new CliError('use one of --after, --before and --newest', 'USAGE');
  }
  const limit = opts.limit === undefined ? INBOX_DEFAULT_LIMIT : positiveInteger(opts.limit, '--limit', INBOX_PAGE_MAX);
  const cursor =
    opts.after !== undefined
      ? { after: messageId(opts.after, '--after') }
      : opts.before !== undefined
        ? { before: messageId(opts.before, '--before') }
        : opts.newest === true
          ? { before: '' }
          : { after: '' };
  return { includeAcked: opts.all === true, limit, cursor };
}
