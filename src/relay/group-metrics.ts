// /metrics of a relay group (`relay serve --workers N`). A scrape reaches one worker; that worker asks
// the primary, which asks every worker for its registry over the cluster's IPC channel, adds its own
// (the sweeps and the start-up epoch rotation are counted there) and answers the whole group's
// figures, merged by prom-client's AggregatorRegistry.aggregate: counters and histograms summed, the
// store-wide gauges (queue depth, oldest item) taken once (metrics.ts sets their aggregator). Every
// scrape thus sees the same relay whichever worker answers it. A worker that does not answer within
// GROUP_SCRAPE_WAIT_MS (one starting, or dying) is left out of that scrape rather than failing it.
import cluster, { type Worker } from 'node:cluster';
import promClient, { type Registry } from 'prom-client';
import { MetricsUnavailableError } from './http/metrics.ts';

/** Scrapes one worker lets wait for the primary at once; more are refused with 503 (a scraper retries). */
export const MAX_WAITING_SCRAPES = 16;
/** How long the primary waits for the workers' figures before it answers with those it has. */
export const GROUP_SCRAPE_WAIT_MS = 2_000;

/** A worker asks the primary for the group's exposition. */
const SCRAPE = 'agentmbx-metrics-scrape';
/** The primary's answer to it. */
const SCRAPED = 'agentmbx-metrics-scraped';
/** The primary asks a worker for its own figures… */
const PART = 'agentmbx-metrics-part';
/** …and the worker answers with its registry as JSON. */
const PART_ANSWER = 'agentmbx-metrics-part-answer';

type Figures = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

interface Message {
  type: string;
  id: number;
}
type Scraped = Message & ({ body: string } | { error: string });
type PartAnswer = Message & { figures: Figures };

function isMessage(message: unknown, type: string): message is Message {
  return (
    typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type && typeof (message as { id?: unknown }).id === 'number'
  );
}

/** In the primary (before it forks): answers every worker's scrape with the whole group's figures, its own included. */
export function serveGroupMetrics(primary: Registry): void {
  // the primary's questions to the workers waiting for answers: one per worker per scrape in progress
  const waiting = new Map<number, (figures: Figures) => void>();
  let nextId = 1;
  const ask = (worker: Worker): Promise<Figures | null> =>
    new Promise((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        resolve(null);
      }, GROUP_SCRAPE_WAIT_MS);
      waiting.set(id, (figures) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(figures);
      });
      worker.send({ type: PART, id } satisfies Message, undefined, (error) => {
        if (error !== null) waiting.get(id)?.([]);
      });
    });
  const gather = async (): Promise<string> => {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
    const parts = await Promise.all(workers.map(ask));
    const known = parts.filter((part): part is Figures => part !== null);
    return promClient.AggregatorRegistry.aggregate([...known, await primary.getMetricsAsJSON()]).metrics();
  };
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (isMessage(message, PART_ANSWER)) {
      waiting.get(message.id)?.((message as PartAnswer).figures);
      return;
    }
    if (!isMessage(message, SCRAPE)) return;
    const { id } = message;
    const answer = (reply: Scraped): void => {
      // a worker that died meanwhile has no scraper left to answer
      if (worker.isConnected()) worker.send(reply, undefined, () => {});
    };
    gather().then(
      (body) => {
        answer({ type: SCRAPED, id, body });
      },
      (error: unknown) => {
        answer({ type: SCRAPED, id, error: error instanceof Error ? error.message : String(error) });
      },
    );
  });
}

/**
 * In a worker, before it serves: answers the primary's questions for this worker's figures (none
 * until `exposeTo` names its registry) and returns the group's exposition for its /metrics.
 */
export function joinGroupMetrics(): { exposeTo(registry: Registry): () => Promise<{ contentType: string; body: string }> } {
  let own: Registry | null = null;
  const scrapes = new Map<number, { resolve: (body: string) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  process.on('message', (message: unknown) => {
    if (isMessage(message, PART)) {
      const { id } = message;
      void (own?.getMetricsAsJSON() ?? Promise.resolve([])).then((figures) => {
        if (process.connected) process.send?.({ type: PART_ANSWER, id, figures } satisfies PartAnswer, undefined, undefined, () => {});
      });
      return;
    }
    if (!isMessage(message, SCRAPED)) return;
    const call = scrapes.get(message.id);
    scrapes.delete(message.id);
    const scraped = message as Scraped;
    if ('body' in scraped) call?.resolve(scraped.body);
    else call?.reject(new MetricsUnavailableError(`the relay group's metrics could not be gathered: ${scraped.error}`));
  });
  process.once('disconnect', () => {
    for (const call of scrapes.values()) call.reject(new MetricsUnavailableError('the relay primary is gone'));
    scrapes.clear();
  });
  return {
    exposeTo(registry) {
      own = registry;
      return async () => {
        if (scrapes.size >= MAX_WAITING_SCRAPES) throw new MetricsUnavailableError(`more than ${MAX_WAITING_SCRAPES} scrapes of this worker are waiting`);
        if (process.send === undefined || !process.connected) throw new MetricsUnavailableError('the relay primary is gone');
        const id = nextId++;
        const body = await new Promise<string>((resolve, reject) => {
          scrapes.set(id, { resolve, reject });
          process.send?.({ type: SCRAPE, id } satisfies Message, undefined, undefined, () => {});
        });
        return { contentType: registry.contentType, body };
      };
    },
  };
}
