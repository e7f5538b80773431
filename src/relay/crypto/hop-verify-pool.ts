// Hop signatures checked on worker threads (issue 7). The Ed25519 verification of a hop costs about
// 0.12 ms, the largest single cost of a push on the event loop; posted to a worker, batched per
// event-loop turn, it costs the event loop about 0.02 ms. The event loop still checks the inputs
// strictly and builds the hop string, so a thread only verifies. Bounded: at most
// MAX_PENDING_HOP_CHECKS checks and MAX_PENDING_HOP_CHARS of hop strings wait for a thread, and a
// check beyond either runs on the event loop. A thread that dies takes the pool down to checking on
// the event loop, after its waiting checks are answered there: a hop is never refused or accepted
// because of the pool.
import { Worker } from 'node:worker_threads';
import { isPublicKey, SIGNATURE_BYTES, verifySignature } from '../../protocol/keys.ts';
import { fromBase64Exact } from '../../protocol/base64.ts';
import { relayHopString } from '../../protocol/relay-hop.ts';
import { verifyHopInline, type HopCheck, type HopVerifier } from './hop-verifier.ts';

/** One check as posted: [id, publicKey, hop string, signature], all checked already. */
type HopJob = [number, string, string, string];
type HopAnswer = [number, boolean];

/** Largest hop_verify_threads accepted. */
export const MAX_HOP_VERIFY_THREADS = 16;
/** Checks waiting for a thread's answer at most. */
export const MAX_PENDING_HOP_CHECKS = 4_096;
/** Characters of hop strings (each holds its request's body) waiting for the threads at most: 8 Mi. */
export const MAX_PENDING_HOP_CHARS = 8 * 1024 * 1024;
/** Heap of one thread: it holds at most the waiting hop strings and its key cache. */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 48, maxYoungGenerationSizeMb: 4 };

const WORKER_URL = new URL('./ed25519-verify-worker.mjs', import.meta.url);

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
  chars: number;
  resolve: (ok: boolean) => void;
}

/** The hop string and signature of a check whose inputs are well formed, or null (the check fails). */
function verifiable(check: HopCheck): { text: string; sig: string } | null {
  const { publicKey, request, ts, sig } = check;
  if (typeof sig !== 'string' || fromBase64Exact(sig, SIGNATURE_BYTES) === null || !isPublicKey(publicKey)) return null;
  try {
    return { text: relayHopString(request.method, request.path, ts, request.rawBody), sig };
  } catch {
    return null;
  }
}

class HopVerifyPool implements HopVerifier {
  readonly #workers: Worker[];
  readonly #waiting = new Map<number, Waiting>();
  readonly #onFailure: (reason: string) => void;
  #outbox: Array<{ id: number; job: HopJob }> = [];
  #flushScheduled = false;
  #nextId = 0;
  #nextWorker = 0;
  #pendingChars = 0;
  /** set when a worker failed or the pool closed: every check then runs on the event loop */
  #inline = false;
  /** whether the threads keep the process alive: only while checks wait for them */
  #held = false;

  constructor(options: HopVerifyPoolOptions) {
    this.#onFailure = options.onFailure;
    this.#workers = Array.from({ length: options.threads }, () => this.#start(options.workerUrl ?? WORKER_URL));
  }

  #start(url: URL): Worker {
    // none of the flags the relay was started with: some (--input-type, -e) would fail the thread
    const worker = new Worker(url, { resourceLimits: WORKER_LIMITS, execArgv: [] });
    worker.on('message', (answers: HopAnswer[]) => {
      for (const [id, ok] of answers) {
        const waiting = this.#waiting.get(id);
        if (waiting === undefined) continue;
        this.#waiting.delete(id);
        this.#pendingChars -= waiting.chars;
        waiting.resolve(ok === true);
      }
      this.#holdWhileWaiting();
    });
    worker.on('error', (error) => this.#fail(`a hop-verify thread failed: ${error.message}`));
    worker.on('exit', (code) => this.#fail(`a hop-verify thread exited with code ${code}`));
    // after the listeners: adding a 'message' listener refs the worker again
    worker.unref();
    return worker;
  }

  /** An idle pool never keeps the process alive; one with checks out does, until they are answered. */
  #holdWhileWaiting(): void {
    const waiting = this.#waiting.size > 0;
    if (waiting === this.#held) return;
    this.#held = waiting;
    for (const worker of this.#workers) {
      if (waiting) worker.ref();
      else worker.unref();
    }
  }

  verify(check: HopCheck): Promise<boolean> {
    if (this.#inline) return Promise.resolve(verifyHopInline(check));
    const input = verifiable(check);
    if (input === null) return Promise.resolve(false);
    const chars = input.text.length;
    if (this.#waiting.size >= MAX_PENDING_HOP_CHECKS || this.#pendingChars + chars > MAX_PENDING_HOP_CHARS) {
      // the hop string is built already: verify it here rather than build it again
      return Promise.resolve(verifySignature(check.publicKey, input.text, input.sig));
    }
    const worker = this.#workers[this.#nextWorker] as Worker;
    this.#nextWorker = (this.#nextWorker + 1) % this.#workers.length;
    const id = this.#nextId;
    this.#nextId = (this.#nextId + 1) % Number.MAX_SAFE_INTEGER;
    this.#pendingChars += chars;
    return new Promise((resolve) => {
      this.#waiting.set(id, { check, worker, chars, resolve });
      this.#holdWhileWaiting();
      this.#outbox.push({ id, job: [id, check.publicKey, input.text, input.sig] });
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
    void this.#stop();
  }

  /** Answers every waiting check on the event loop and stops the workers. */
  #stop(): Promise<unknown> {
    this.#inline = true;
    this.#outbox = [];
    for (const [id, waiting] of this.#waiting) {
      this.#waiting.delete(id);
      waiting.resolve(verifyHopInline(waiting.check));
    }
    this.#pendingChars = 0;
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
