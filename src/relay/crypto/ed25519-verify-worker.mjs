// An Ed25519 verify thread for hop-verify-pool.ts. Plain JavaScript on purpose: a TypeScript file
// would load Node's type stripper into the thread, about 10 MB more of resident memory per thread.
// The pool checks every input strictly before posting it (the key a canonical Ed25519 point, the
// signature strict base64 of 64 bytes, the hop string built), so this only runs the verification.
// A batch is [[id, publicKeyBase64, text, signatureBase64], …]; the answer is [[id, ok], …].
import { createPublicKey, verify } from 'node:crypto';
import { parentPort } from 'node:worker_threads';

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
/** Key objects kept by their base64 text; the oldest goes first beyond this. */
const KEY_CACHE_MAX = 1024;
const keys = new Map();

function keyOf(publicKey) {
  let key = keys.get(publicKey);
  if (key === undefined) {
    if (keys.size >= KEY_CACHE_MAX) keys.delete(keys.keys().next().value);
    key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, Buffer.from(publicKey, 'base64')]), format: 'der', type: 'spki' });
    keys.set(publicKey, key);
  }
  return key;
}

function answer([id, publicKey, text, signature]) {
  try {
    return [id, verify(null, Buffer.from(text, 'utf8'), keyOf(publicKey), Buffer.from(signature, 'base64'))];
  } catch {
    return [id, false];
  }
}

parentPort.on('message', (jobs) => {
  parentPort.postMessage(jobs.map(answer));
});
