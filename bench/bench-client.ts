// The load generator's HTTP client: keep-alive node:http with the relay hop, lighter than fetch so
// that the machine's cores go to the relay under test rather than to the client.
import { Agent, request } from 'node:http';
import type { SigningKey } from '../src/protocol/keys.ts';
import { signRelayHop } from '../src/protocol/relay-hop.ts';

export interface PreparedCall {
  method: 'GET' | 'POST';
  path: string;
  rawBody: string;
  headers: Record<string, string>;
}

export interface BenchAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** One keep-alive connection per concurrent caller at most. */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

export class BenchClient {
  readonly #url: URL;
  readonly #hostName: string;
  readonly #key: SigningKey;
  constructor(baseUrl: string, hostName: string, key: SigningKey) {
    this.#url = new URL(baseUrl);
    this.#hostName = hostName;
    this.#key = key;
  }

  /** A call signed now and sent later: the load generator builds a phase's requests before its clock starts. */
  prepare(method: 'GET' | 'POST', path: string, rawBody = ''): PreparedCall {
    const headers: Record<string, string> = { ...signRelayHop({ method, path, rawBody }, this.#hostName, this.#key, Date.now()) };
    if (rawBody !== '') headers['content-type'] = 'application/json';
    return { method, path, rawBody, headers };
  }

  send(call: PreparedCall): Promise<BenchAnswer> {
    const { method, path, rawBody, headers } = call;
    return new Promise((resolve, reject) => {
      const req = request({ host: this.#url.hostname, port: this.#url.port, method, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
          } catch (error) {
            reject(error);
          }
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(rawBody);
    });
  }

  call(method: 'GET' | 'POST', path: string, rawBody = ''): Promise<BenchAnswer> {
    return this.send(this.prepare(method, path, rawBody));
  }

  preparePush(items: unknown[]): PreparedCall {
    return this.prepare('POST', '/v2/relay/items', JSON.stringify({ items }));
  }

  pull(after: number, limit: number): Promise<BenchAnswer> {
    return this.call('GET', `/v2/relay/items?after=${after}&limit=${limit}`);
  }

  ack(through: number, epoch: string): Promise<BenchAnswer> {
    return this.call('POST', '/v2/relay/ack', JSON.stringify({ through, epoch }));
  }
}
