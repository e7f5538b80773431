// Reading a fetch answer without trusting its size: every client of another machine (a peer, a
// relay, a JWKS issuer) reads at most a cap of bytes and refuses the rest.

export class AnswerTooLargeError extends Error {
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`);
  }
}

/** The answer's body as text, at most `maxBytes`; AnswerTooLargeError (stream cancelled) past that. */
export async function readCappedText(response: Response, maxBytes: number): Promise<string> {
  if (Number(response.headers.get('content-length') ?? '0') > maxBytes) {
    await response.body?.cancel();
    throw new AnswerTooLargeError(maxBytes);
  }
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new AnswerTooLargeError(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
