// One daemon per home: a lock file holding the daemon's pid. A lock left by a daemon that died
// (SIGKILL, power loss) names a pid that is gone, and is taken over.
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { HomeError } from './home-files.ts';

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

/** Takes the home's daemon lock; returns its release. Throws HomeError when a live daemon holds it. */
export function acquireDaemonLock(home: string): () => void {
  const path = daemonLockPath(home);
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new HomeError(`cannot create ${path}: ${(err as Error).message}`);
      const pid = Number(readFileSync(path, 'utf8').trim());
      if (Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
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
