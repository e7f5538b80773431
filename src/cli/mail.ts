// Agents and mail: agents, agents add, send, inbox, read, ack, status.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { withNode } from './host-common.ts';
import { printJson, printResult } from './output.ts';
import { NAME_RE } from '../protocol/names.ts';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';
import { ackMessage, listInbox, readMessage } from '../host/mailbox.ts';
import { messageStatus } from '../host/receipts.ts';
import { outboxOverview } from '../host/outbox.ts';
import { RESERVED_NAMES } from '../host/route.ts';
import { sendMail } from '../host/send.ts';
import type { InboxRow } from '../host/store/mail-tables.ts';

function messageJson(m: InboxRow): Record<string, unknown> {
  return {
    id: m.id, from: m.from_addr, to: JSON.parse(m.to_json) as unknown, kind: m.kind, subject: m.subject, body: m.body,
    thread: m.thread, reply_to: m.reply_to, ts: m.ts, state: m.state, note: m.note,
    meta: m.meta_json === null ? null : JSON.parse(m.meta_json) as unknown,
  };
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
    .option('--json', 'print JSON')
    // optsWithGlobals: `agents --json` is the parent's option too, and commander hands it to the parent
    .action((name: string, _local: unknown, command: Command) => withNode((node) => {
      const opts = command.optsWithGlobals<{ role?: string; json?: boolean }>();
      if (!NAME_RE.test(name)) throw new CliError(`bad agent name "${name}": 2-40 of a-z, 0-9 and -, starting with a letter or digit`, 'USAGE');
      if (RESERVED_NAMES.includes(name)) throw new CliError(`"${name}" is reserved`, 'USAGE');
      if (opts.role !== undefined && !NAME_RE.test(opts.role)) throw new CliError(`bad role "${opts.role}"`, 'USAGE');
      const added = node.store.mail.addAgent(name, opts.role ?? null, node.nowMs());
      if (!added && opts.role !== undefined) node.store.mail.setAgentRole(name, opts.role);
      const text = added ? `added ${name}@${node.config.host}` : `${name} exists${opts.role === undefined ? '' : `; role set to ${opts.role}`}`;
      printResult(opts.json, { agent: `${name}@${node.config.host}`, added, role: node.store.mail.agent(name)?.role ?? null }, text);
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
    .option('--json', 'print JSON')
    .action((opts: { agent: string; all?: boolean; json?: boolean }) => withNode((node) => {
      const rows = listInbox(node, opts.agent, opts.all === true);
      if (opts.json === true) printJson(rows.map((r) => { const { body: _b, ...rest } = messageJson(r); return rest; }));
      else if (rows.length === 0) process.stdout.write('no mail\n');
      else for (const r of rows) process.stdout.write(`${r.id}  ${r.state.padEnd(9)}  ${r.from_addr}  ${r.subject}\n`);
    }));

  program.command('read <id>')
    .description('show a message (marks it read)')
    .requiredOption('--agent <name>', 'the agent')
    .option('--json', 'print JSON')
    .action((id: string, opts: { agent: string; json?: boolean }) => withNode((node) => {
      const m = readMessage(node, id, opts.agent);
      if (opts.json === true) printJson(messageJson(m));
      else process.stdout.write(`From: ${m.from_addr}\nTo: ${(JSON.parse(m.to_json) as string[]).join(', ')}\nDate: ${m.ts}\nKind: ${m.kind}\nSubject: ${m.subject}\nId: ${m.id}\n\n${m.body}\n`);
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
          for (const [state, n] of Object.entries(overview.outbox)) process.stdout.write(`${state.padEnd(16)} ${n}\n`);
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
          process.stdout.write(`${r.recipient.padEnd(30)} ${r.state}${r.at === null ? '' : `  ${r.at}`}${r.via === null ? '' : `  via ${r.via}`}${r.note === null ? '' : `  ${r.note}`}\n`);
        }
      }
    }));
}
