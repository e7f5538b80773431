// One daemon per home: a lock file holding the daemon's pid. A lock left by a daemon that died
// (SIGKILL, power loss) names a pid that is gone, and is taken over.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { HomeError } from './core/home-files.ts';

export function daemonLockPath(home: string): string {
  return join(home, 'daemon.lock');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pid of the live daemon of this home, or null when none runs. */
export function runningDaemonPid(home: string): number | null {
  let text: string;
  try {
    text = readFileSync(daemonLockPath(home), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.trim());
  return Number.isSafeInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

/** Takes the home's daemon lock; returns its release. Throws HomeError when a live daemon holds it. */
export function acquireDaemonLock(home: string): () => void {
  const path = daemonLockPath(home);
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new HomeError(`cannot create ${path}: ${(err as Error).message}`);
      const pid = runningDaemonPid(home);
      if (pid !== null && pid !== process.pid) {
        throw new HomeError(`a daemon already runs for this home (pid ${pid})`);
      }
      rmSync(path, { force: true });
      continue;
    }
    writeSync(fd, `${process.pid}\n`);
    closeSync(fd);
    return () => rmSync(path, { force: true });
  }
  throw new HomeError(`cannot take ${path}: another daemon is starting`);
}
