// agentmbx doctor [--strict] [--json]: every check, then a verdict counting warnings and failures;
// exit 1 on a failure (with --strict, on a warning too).
import type { Command } from 'commander';
import { CliError } from './cli-error.ts';
import { escapeInLine as inLine } from '../common/terminal-text.ts';
import { printJson } from './output.ts';
import { defaultHome } from '../host/core/identity.ts';

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL' } as const;

export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('check keys, file modes, the store, the daemon, every peer and the outbox')
    .option('--strict', 'exit 1 on a warning too, not only on a failure')
    .option('--json', 'print JSON')
    .action(async (opts: { strict?: boolean; json?: boolean }) => {
      const [{ doctorVerdict, runDoctor }, { clientDoctorChecks }] = await Promise.all([import('../host/doctor.ts'), import('../setup/clients.ts')]);
      const report = await runDoctor(defaultHome());
      report.checks.push(...clientDoctorChecks(process.cwd(), process.env));
      const verdict = doctorVerdict(report);
      if (opts.json === true) printJson({ ...report, verdict });
      else {
        for (const c of report.checks) process.stdout.write(`${MARK[c.level]}  ${c.check}: ${inLine(c.detail)}\n`);
        process.stdout.write(`${verdict}\n`);
      }
      if (!report.ok) throw new CliError(`doctor found something that needs you: ${verdict}`, 'FAILURE', true);
      if (opts.strict === true && report.warnings > 0) throw new CliError(`doctor --strict: ${verdict}`, 'FAILURE', true);
    });
}
