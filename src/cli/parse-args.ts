// Values of command-line flags: a bad one is a usage error (exit 2) naming the flag's rule.
import { CliError } from './cli-error.ts';
import { isUlid } from '../protocol/ulid.ts';
import { portFromText } from '../common/port.ts';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `10m`, `30s`, `2h`, `1d`, `500ms`: the unit is required (a bare `10` is ambiguous). */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (m === null) throw new CliError(`bad duration "${text}": a number with a unit (ms, s, m, h, d), e.g. 30s, 10m, 2h`, 'USAGE');
  return Number(m[1]) * (UNITS[m[2] as string] ?? 1);
}

export function parsePort(text: string): number {
  const port = portFromText(text.trim());
  if (port === null) throw new CliError(`bad port "${text}"`, 'USAGE');
  return port;
}

/** An integer from 1 to `max`, for `flag`. */
export function positiveInteger(text: string, flag: string, max: number): number {
  const value = /^[1-9][0-9]*$/.test(text) ? Number(text) : NaN;
  if (!(value <= max)) throw new CliError(`${flag} must be an integer from 1 to ${max}`, 'USAGE');
  return value;
}

/** A message id (a ULID, as `inbox` shows it, in any case), for `flag`. */
export function messageId(text: string, flag: string): string {
  const id = text.trim().toUpperCase();
  if (!isUlid(id)) throw new CliError(`${flag} must be a message id (26 characters, as inbox shows)`, 'USAGE');
  return id;
}
