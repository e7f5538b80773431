// One address in front of several relay processes, as `relay serve --workers N` (node:cluster's round
// robin) or a load balancer in front of relays sharing a PostgreSQL store puts them: each new TCP
// connection goes to the next backend in turn, and bytes pass through untouched (hop signatures
// cover the method, path and body, never the address).
import { connect, createServer, type Socket } from 'node:net';

export interface RoundRobinProxy {
  url: string;
  close(): Promise<void>;
}

export async function roundRobinProxy(backendUrls: string[], port = 0): Promise<RoundRobinProxy> {
  const backends = backendUrls.map((url) => new URL(url));
  const sockets = new Set<Socket>();
  let next = 0;
  // half-open both ways, as a direct connection is: a client that ends its side still gets the answer
  const server = createServer({ allowHalfOpen: true }, (client) => {
    const to = backends[next++ % backends.length] as URL;
    const backend = connect({ port: Number(to.port), host: to.hostname, allowHalfOpen: true });
    for (const socket of [client, backend]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    }
    // a side that fails ends the other after what it already passed on (a relay refusing a body
    // too large answers, then resets the connection while the client still sends)
    client.on('error', () => backend.end());
    backend.on('error', () => {
      client.unpipe(backend);
      client.end();
    });
    client.pipe(backend).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
