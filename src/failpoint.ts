// Named fault points for the drills. A drill arms one point through MBX_FAILPOINT=<name>, or
// <name>@<n> to let it pass n-1 times first. A crash point reached while armed kills the process
// with SIGKILL (no cleanup, exactly like a crash); an I/O point fails like a broken disk (EIO) from
// then on. Unarmed, a point is one string comparison. No test logic lives in the product beyond the names.

const [armed = '', fromHit = '1'] = (process.env.MBX_FAILPOINT ?? '').split('@');
const armedFromHit = Number(fromHit);
let hits = 0;

function fires(name: string): boolean {
  if (armed === '' || armed !== name) return false;
  hits += 1;
  return hits >= armedFromHit;
}

export function failPoint(name: string): void {
  if (fires(name)) process.kill(process.pid, 'SIGKILL');
}

/** Throws the error a failing disk gives (EIO) once the point is armed and reached. */
export function ioFailPoint(name: string): void {
  if (fires(name)) throw Object.assign(new Error(`EIO: i/o error (fault point ${name})`), { code: 'EIO' });
}
