// The floor of one single-item push (issue 17): the work no relay can avoid, each part measured in
// the same run: an Ed25519 hop verify, an Ed25519 accept signature, one HTTP exchange with a server
// that does nothing else (a null server in its own process, its CPU per request read from /proc),
// and one 1 KiB row of a 100-row commit.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BenchClient, type PreparedCall } from './bench-client.ts';
import type { Ceilings } from './ceilings.ts';
import { processCpuMs } from './relay-child.ts';
import { generateSigningKey } from '../src/protocol/keys.ts';

export interface Floor {
  verifyMs: number;
  signMs: number;
  httpExchangeMs: number;
  rowOfHundredMs: number;
  totalMs: number;
}

/** The null server's CPU per request with `concurrency` keep-alive clients sending `body`-sized POSTs for `seconds`. */
async function nullServerCpuMs(concurrency: number, seconds: number, bodyBytes: number): Promise<number> {
  const child = spawn(process.execPath, [join(import.meta.dirname, 'null-server.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const m = /^listening (\d+)$/.exec(line);
        if (m !== null) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`the null server exited with ${code}`)));
    });
    const client = new BenchClient(`http://127.0.0.1:${port}`, 'floor', generateSigningKey());
    const call: PreparedCall = client.prepare('POST', '/v2/relay/items', JSON.stringify({ pad: 'x'.repeat(bodyBytes) }));
    const pid = child.pid as number;
    const before = processCpuMs(pid);
    const end = performance.now() + seconds * 1000;
    let requests = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          await client.send(call);
          requests += 1;
        }
      }),
    );
    return (processCpuMs(pid) - before) / requests;
  } finally {
    child.kill('SIGTERM');
  }
}

/** The floor's parts: signatures and rows from the ceilings, the HTTP exchange measured now at c=`concurrency`. */
export async function measureFloor(ceilings: Ceilings, concurrency: number, requestBodyBytes: number): Promise<Floor> {
  const httpExchangeMs = await nullServerCpuMs(concurrency, 2, requestBodyBytes);
  const parts = {
    verifyMs: ceilings.ed25519VerifyCpuMs,
    signMs: ceilings.ed25519SignCpuMs,
    httpExchangeMs,
    rowOfHundredMs: ceilings.sqliteHundredRowsCpuMsPerRow,
  };
  return { ...parts, totalMs: parts.verifyMs + parts.signMs + parts.httpExchangeMs + parts.rowOfHundredMs };
}
