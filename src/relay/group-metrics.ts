// /metrics of a relay group (`relay serve --workers N`). A scrape reaches one worker; that worker asks
// the primary, which gathers every worker's registry through prom-client's AggregatorRegistry (over
// the cluster's IPC channel) and answers the whole group's figures: counters and histograms summed,
// the store-wide gauges (queue depth, oldest item) taken once (metrics.ts sets their aggregator), so
// every scrape sees the same relay whichever worker answers it.
import cluster from 'node:cluster';
import promClient, { type Registry } from 'prom-client';

/** Scrapes one worker lets wait for the primary at once; more are refused (a scraper retries). */
export const MAX_WAITING_SCRAPES = 16;

const SCRAPE = 'agentmbx-metrics-scrape';
const SCRAPED = 'agentmbx-metrics-scraped';

interface ScrapeMessage {
  type: typeof SCRAPE;
  id: number;
}

type ScrapedMessage = { type: typeof SCRAPED; id: number; body: string } | { type: typeof SCRAPED; id: number; error: string };

function hasType<T>(type: string) {
  return (message: unknown): message is T => typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;
}
const isScrape = hasType<ScrapeMessage>(SCRAPE);
const isScraped = hasType<ScrapedMessage>(SCRAPED);

/** In the primary (before it forks): answers every worker's scrape with the whole group's metrics. */
export function serveGroupMetrics(): void {
  const aggregator = new promClient.AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isScrape(message)) return;
    const { id } = message;
    const answer = (reply: ScrapedMessage): void => {
      // a worker that died meanwhile has no scraper left to answer
      if (worker.isConnected()) worker.send(reply, undefined, () => {});
    };
    aggregator.clusterMetrics().then(
      (body) => { answer({ type: SCRAPED, id, body }); },
      (error: unknown) => { answer({ type: SCRAPED, id, error: error instanceof Error ? error.message : String(error) }); },
    );
  });
}

/** In a worker: hands `registry` to the primary's aggregation and returns the group's exposition. */
export function groupExposition(registry: Registry): () => Promise<{ contentType: string; body: string }> {
  promClient.AggregatorRegistry.setRegistries([registry]);
  // constructing one installs the worker's answer to the primary's requests for its registry
  new promClient.AggregatorRegistry();
  const waiting = new Map<number, { resolve: (body: string) => void; reject: (error: Error) => void }>();
  let nextId = 1;
  process.on('message', (message: unknown) => {
    if (!isScraped(message)) return;
    const call = waiting.get(message.id);
    waiting.delete(message.id);
    if ('body' in message) call?.resolve(message.body);
    else call?.reject(new Error(`the relay group's metrics could not be gathered: ${message.error}`));
  });
  process.once('disconnect', () => {
    for (const call of waiting.values()) call.reject(new Error('the relay primary is gone'));
    waiting.clear();
  });
  return async () => {
    if (waiting.size >= MAX_WAITING_SCRAPES) throw new Error(`more than ${MAX_WAITING_SCRAPES} scrapes of this worker are waiting`);
    if (process.send === undefined || !process.connected) throw new Error('the relay primary is gone');
    const id = nextId++;
    const body = await new Promise<string>((resolve, reject) => {
      waiting.set(id, { resolve, reject });
      process.send?.({ type: SCRAPE, id } satisfies ScrapeMessage, undefined, undefined, () => {});
    });
    return { contentType: registry.contentType, body };
  };
}
