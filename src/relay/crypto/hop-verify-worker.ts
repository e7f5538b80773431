// A hop-verify worker thread: answers each batch of checks posted by hop-verify-pool.ts with one
// message of [id, ok] pairs, in the batch's order. A check that cannot be read is not signed.
import { parentPort } from 'node:worker_threads';
import { verifyRelayHopSignature } from '../../protocol/relay-hop.ts';

/** One check as posted: [id, publicKey, method, path, ts, rawBody, sig]. */
export type HopJob = [number, string, string, string, string, string, string];
export type HopAnswer = [number, boolean];

function answer(job: HopJob): HopAnswer {
  const [id, publicKey, method, path, ts, rawBody, sig] = job;
  try {
    return [id, verifyRelayHopSignature(publicKey, { method, path, rawBody }, ts, sig)];
  } catch {
    return [id, false];
  }
}

parentPort?.on('message', (jobs: HopJob[]) => {
  parentPort?.postMessage(jobs.map(answer));
});
