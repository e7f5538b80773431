// How busy the whole machine was during a phase, from /proc/stat: every core's busy time over the
// time that passed, as a percentage of one core (200 % is both cores of a 2-core machine busy).
import { readFileSync } from 'node:fs';

export interface CpuSample {
  busy: number;
  total: number;
}

export function sampleMachineCpu(): CpuSample {
  // "cpu  user nice system idle iowait irq softirq steal …" in clock ticks, all cores together
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.slice(0, 8).reduce((sum, value) => sum + value, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** Busy percentage of one core between two samples, on a machine of `cores` cores. */
export function machineBusyPercent(before: CpuSample, after: CpuSample, cores: number): number {
  const total = after.total - before.total;
  return total <= 0 ? Number.NaN : (100 * cores * (after.busy - before.busy)) / total;
}
