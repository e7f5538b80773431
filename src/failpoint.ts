// Named crash points for the drills. A drill arms one point through MBX_FAILPOINT=<name>; when the
// product reaches it, the process kills itself with SIGKILL (no cleanup, exactly like a crash).
// Unarmed, a point is one string comparison. No test logic lives in the product beyond the names.

const armed = process.env.MBX_FAILPOINT ?? '';

export function failPoint(name: string): void {
  if (armed !== '' && armed === name) process.kill(process.pid, 'SIGKILL');
}
