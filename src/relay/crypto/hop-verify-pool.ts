// Hop signatures checked on worker threads (issue 7). An Ed25519 verification with its canonical hop
// string costs about 0.15 ms, the largest single cost of a push on the event loop; posted to a
// worker, batched per event-loop turn, it costs the event loop about 0.02 ms. Bounded: at most
// MAX_PENDING_HOP_CHECKS wait for a worker, and a check beyond that runs on the event loop. A worker
// that dies takes the pool down to checking on the event loop, after its waiting checks are
// answered there: a hop is never refused or accepted because of the pool.
import { Worker } from 'node:worker_threads';
import { verifyHopInline, type HopCheck, type HopVerifier } from './hop-verifier.ts';
import type { HopAnswer, HopJob } from './hop-verify-worker.ts';

/** Largest hop_verify_threads accepted. */
export const MAX_HOP_VERIFY_THREADS = 16;
/** Checks waiting for a worker's answer at most (each holds its request's body). */
export const MAX_PENDING_HOP_CHECKS = 4_096;
/** Heap of one worker: a batch holds the bodies of the requests of one event-loop turn. */
const WORKER_OLD_SPACE_MB = 64;

const WORKER_URL = new URL('./hop-verify-worker.ts', import.meta.url);

export interface HopVerifyPoolOptions {
  threads: number;
  /** hears once when a worker dies (the pool then checks on the event loop) */
  onFailure: (reason: string) => void;
  /** the worker's script (tests substitute one that fails) */
  workerUrl?: URL;
}

interface Waiting {
  check: HopCheck;
  worker: Worker;
  resolve: (ok: boolean) => void;
}

class HopVerifyPool implements HopVerifier {
  readonly #workers: Worker[];
  readonly #waiting = new Map<number, Waiting>();
  readonly #onFailure: (reason: string) => void;
  #outbox: Array<{ id: number; job: HopJob }> = [];
  #flushScheduled = false;
  #nextId = 0;
  #nextWorker = 0;
  /** set when a worker failed or the pool closed: every check then runs on the event loop */
  #inline = false;

  constructor(options: HopVerifyPoolOptions) {
    this.#onFailure = options.onFailure;
    this.#workers = Array.from({ length: options.threads }, () => this.#start(options.workerUrl ?? WORKER_URL));
  }

  #start(url: URL): Worker {
    const worker = new Worker(url, { resourceLimits: { maxOldGenerationSizeMb: WORKER_OLD_SPACE_MB } });
    worker.unref();
    worker.on('message', (answers: HopAnswer[]) => {
      for (const [id, ok] of answers) {
        const waiting = this.#waiting.get(id);
        this.#waiting.delete(id);
        waiting?.resolve(ok === true);
      }
    });
    worker.on('error', (error) => this.#fail(`a hop-verify thread failed: ${error.message}`));
    worker.on('exit', (code) => this.#fail(`a hop-verify thread exited with code ${code}`));
    return worker;
  }

  verify(check: HopCheck): Promise<boolean> {
    if (this.#inline || this.#waiting.size >= MAX_PENDING_HOP_CHECKS || typeof check.sig !== 'string') {
      return Promise.resolve(verifyHopInline(check));
    }
    const worker = this.#workers[this.#nextWorker] as Worker;
    this.#nextWorker = (this.#nextWorker + 1) % this.#workers.length;
    const id = this.#nextId;
    this.#nextId = (this.#nextId + 1) % Number.MAX_SAFE_INTEGER;
    const { publicKey, request, ts, sig } = check;
    return new Promise((resolve) => {
      this.#waiting.set(id, { check, worker, resolve });
      this.#outbox.push({ id, job: [id, publicKey, request.method, request.path, ts, request.rawBody, sig] });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        // the checks of every request read in this event-loop turn go out together
        setImmediate(() => this.#flush());
      }
    });
  }

  pending(): number {
    return this.#waiting.size;
  }

  #flush(): void {
    this.#flushScheduled = false;
    const batches = new Map<Worker, HopJob[]>();
    for (const { id, job } of this.#outbox.splice(0)) {
      const waiting = this.#waiting.get(id);
      if (waiting === undefined) continue;
      const batch = batches.get(waiting.worker);
      if (batch === undefined) batches.set(waiting.worker, [job]);
      else batch.push(job);
    }
    for (const [worker, jobs] of batches) worker.postMessage(jobs);
  }

  #fail(reason: string): void {
    if (this.#inline) return;
    this.#onFailure(`${reason}; hop signatures are now checked on the event loop`);
    this.#stop();
  }

  /** Answers every waiting check on the event loop and stops the workers. */
  #stop(): Promise<unknown> {
    this.#inline = true;
    this.#outbox = [];
    for (const [id, waiting] of this.#waiting) {
      this.#waiting.delete(id);
      waiting.resolve(verifyHopInline(waiting.check));
    }
    return Promise.all(this.#workers.map((worker) => worker.terminate()));
  }

  async close(): Promise<void> {
    await this.#stop();
  }
}

/** `options.threads` worker threads checking hop signatures. */
export function hopVerifyPool(options: HopVerifyPoolOptions): HopVerifier {
  if (!Number.isInteger(options.threads) || options.threads < 1 || options.threads > MAX_HOP_VERIFY_THREADS) {
    throw new RangeError(`hop verify threads must be 1 … ${MAX_HOP_VERIFY_THREADS}`);
  }
  return new HopVerifyPool(options);
}
