// Agents and mail: agents, agents add, send, inbox (also waiting for mail), watch, read, ack, status.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { parseDuration, printJson, withNode } from './host-common.ts';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';
import { ensureAgent, messageText, messageView, visibleMessage } from '../host/agent-mail.ts';
import { ackMessage, checkMailbox, listInbox, readMessage } from '../host/mailbox.ts';
import { MAIL_WAIT_MAX_MS, waitForUnread, watchDeliveries } from '../host/mail-watch.ts';
import { localAddress, type HostNode } from '../host/node.ts';
import { messageStatus } from '../host/receipts.ts';
import { outboxOverview } from '../host/outbox.ts';
import { sendMail } from '../host/send.ts';

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

/** The body from stdin, read up to the envelope's body limit (a longer one is refused, not cut). */
async function readStdinBody(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new CliError(`the body is longer than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export function registerMailCommands(program: Command): void {
  const agents = program.command('agents')
    .description('list the agents (mailboxes) on this host')
    .option('--json', 'print JSON')
    .action((opts: { json?: boolean }) => withNode((node) => {
      const list = node.store.mail.agents().map((a) => ({ name: a.name, role: a.role }));
      if (opts.json === true) printJson(list);
      else for (const a of list) process.stdout.write(`${a.name}${a.role === null ? '' : `  role:${a.role}`}\n`);
    }));

  agents.command('add <name>')
    .description('add an agent (or set its role)')
    .option('--role <role>', 'a role others can address as role:<role>')
    .option('--description <text>', 'what the agent does (shown to other agents)')
    .action((name: string, opts: { role?: string; description?: string }) => withNode((node) => {
      const added = ensureAgent(node, name, { role: opts.role, description: opts.description });
      process.stdout.write(added ? `added ${name}@${node.config.host}\n` : `${name} exists${opts.role === undefined ? '' : `; role set to ${opts.role}`}\n`);
    }));

  program.command('send')
    .description('send mail; prints the message id')
    .requiredOption('--from <agent>', 'the sending agent on this host')
    .requiredOption('--to <addresses>', 'comma-separated: name@host, name, role:<r>, *, owner')
    .requiredOption('--subject <text>', 'subject')
    .option('--body <text>', 'body (default: read from stdin)')
    .option('--kind <kind>', 'message, request, reply, status, decision, alert or task', 'message')
    .option('--reply-to <id>', 'the message this answers')
    .option('--json', 'print JSON')
    .action((opts: { from: string; to: string; subject: string; body?: string; kind: string; replyTo?: string; json?: boolean }) => withNode(async (node) => {
      const body = opts.body ?? await readStdinBody();
      const to = opts.to.split(',').map((s) => s.trim()).filter((s) => s !== '');
      const sent = sendMail(node, { from: opts.from, to, subject: opts.subject, body, kind: opts.kind, replyTo: opts.replyTo ?? null });
      if (opts.json === true) printJson({ id: sent.id, local: sent.localAgents, hosts: sent.remoteHosts });
      else process.stdout.write(`${sent.id}\n`);
    }));

  program.command('inbox')
    .description('an agent\'s unacked mail, oldest first')
    .requiredOption('--agent <name>', 'the agent')
    .option('--all', 'include acked mail')
    .option('--wait', 'first wait until the agent has unread mail')
    .option('--timeout <seconds>', 'with --wait: give up after this long (seconds, or e.g. 30s, 10m)')
    .option('--json', 'print JSON')
    .action((opts: { agent: string; all?: boolean; wait?: boolean; timeout?: string; json?: boolean }) => withNode(async (node) => {
      if (opts.timeout !== undefined && opts.wait !== true) throw new CliError('--timeout goes with --wait', 2);
      if (opts.wait === true) await waitForMail(node, opts.agent, opts.timeout === undefined ? null : parseTimeout(opts.timeout));
      const rows = listInbox(node, opts.agent, opts.all === true);
      if (opts.json === true) printJson(rows.map((r) => messageView(node, r, false)));
      else if (rows.length === 0) process.stdout.write('no mail\n');
      else for (const r of rows) process.stdout.write(`${r.id}  ${r.state.padEnd(9)}  ${r.from_addr}  ${r.subject}\n`);
    }));

  program.command('watch')
    .description('print a line for each new message to an agent as it lands (runs until stopped)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--json', 'one JSON object per line')
    .action((opts: { agent: string; json?: boolean }) => withNode(async (node) => {
      checkMailbox(node, opts.agent);
      const watch = watchDeliveries(node, opts.agent, (ids) => {
        for (const id of ids) {
          const m = messageView(node, visibleMessage(node, opts.agent, id), false);
          process.stdout.write(opts.json === true ? `${JSON.stringify(m)}\n` : `${m.id}  from ${m.from} (${m.trust})  ${m.subject}\n`);
        }
      });
      process.stderr.write(`watching the mail of ${localAddress(node, opts.agent)}\n`);
      await untilStopped();
      watch.stop();
    }));

  program.command('read <id>')
    .description('show a message (marks it read)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--json', 'print JSON')
    .action((id: string, opts: { agent: string; json?: boolean }) => withNode((node) => {
      const m = messageView(node, readMessage(node, id, opts.agent));
      if (opts.json === true) printJson(m);
      else process.stdout.write(`${messageText(m)}\n`);
    }));

  program.command('ack <id>')
    .description('acknowledge a message (the sender sees it)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--note <text>', 'a short note for the sender')
    .action((id: string, opts: { agent: string; note?: string }) => withNode((node) => {
      const moved = ackMessage(node, id, opts.agent, opts.note ?? null);
      process.stdout.write(moved ? `acked ${id}\n` : `${id} was already acked\n`);
    }));

  program.command('status [id]')
    .description('per recipient, how far a message this host sent has got; without an id, the outbox per state')
    .option('--json', 'print JSON')
    .action((id: string | undefined, opts: { json?: boolean }) => withNode((node) => {
      if (id === undefined) {
        const overview = outboxOverview(node);
        if (opts.json === true) printJson(overview);
        else {
          for (const [state, n] of Object.entries(overview.outbox)) process.stdout.write(`${state.padEnd(16)} ${n}\n`);
          const relay = overview.relay;
          if (relay !== null) process.stdout.write(`relay ${relay.url}: ${relay.state}${relay.state === 'ok' || relay.detail === null ? '' : ` (${relay.detail})`}\n`);
        }
        return;
      }
      const status = messageStatus(node, id);
      if (status === null) throw new CliError(`no message ${id} sent from this host`);
      if (opts.json === true) printJson(status);
      else {
        for (const r of status.recipients) {
          process.stdout.write(`${r.recipient.padEnd(30)} ${r.state}${r.at === null ? '' : `  ${r.at}`}${r.via === null ? '' : `  via ${r.via}`}${r.note === null ? '' : `  ${r.note}`}\n`);
        }
      }
    }));
}
