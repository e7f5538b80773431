// The floor's HTTP exchange: a bare node:http server in its own process that reads a request body
// and answers a small JSON, doing nothing else. Its CPU per request is what one HTTP exchange costs
// the relay's process at least. Prints "listening <port>".
import { createServer } from 'node:http';

const ANSWER = JSON.stringify({ results: [{ item_id: '01JZ0000000000000000000000', status: 'accepted', targets: [{ host_pubkey: 'x'.repeat(44), seq: 1 }] }] });

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(ANSWER);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
