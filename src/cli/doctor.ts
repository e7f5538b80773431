// agentmbx doctor [--json]: exit 1 when something needs the owner.
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson } from './output.ts';
import { runDoctor } from '../host/doctor.ts';
import { defaultHome } from '../host/identity.ts';
import { clientDoctorChecks } from '../setup/clients.ts';

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' } as const;

export function registerDoctorCommand(program: Command): void {
  program.command('doctor')
    .description('check keys, file modes, the store, the daemon, every peer and the outbox')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const report = await runDoctor(defaultHome());
      report.checks.push(...clientDoctorChecks(process.cwd(), process.env));
      if (opts.json === true) printJson(report);
      else {
        for (const c of report.checks) process.stdout.write(`${MARK[c.level]}  ${c.check}: ${inLine(c.detail)}\n`);
        if (report.ok) process.stdout.write('all good\n');
      }
      if (!report.ok) throw new CliError('doctor found something that needs you (FAIL)', 'FAILURE', true);
    });
}
