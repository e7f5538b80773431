// A hop-verify worker that dies on its first batch (exit code 3): the pool must answer the batch itself.
import { parentPort } from 'node:worker_threads';

parentPort?.on('message', () => {
  process.exit(3);
});
