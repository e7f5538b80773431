// A body handed to `send` as bytes (stdin, --body-file) becomes text exactly or is refused: bytes that
// are not UTF-8 are named by offset, never replaced; --base64 sends any file as base64 text.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { CliError } from './cli-error.ts';
import { firstInvalidUtf8Offset } from '../common/unicode-text.ts';
import { MAX_BODY_BYTES } from '../protocol/records/envelope.ts';

/** The most bytes --body-file reads: with --base64 the text grows by 4/3, and the body limit still applies. */
export const BODY_FILE_MAX_BYTES = MAX_BODY_BYTES;

/** `bytes` (from `source`: "stdin" or a file name) as the body: base64 text, or the UTF-8 text they are. */
export function bodyFromBytes(bytes: Uint8Array, source: string, base64: boolean): string {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (base64) return buffer.toString('base64');
  const bad = firstInvalidUtf8Offset(buffer);
  if (bad !== null) {
    const byte = (buffer[bad] ?? 0).toString(16).padStart(2, '0');
    throw new CliError(
      `the body from ${source} is not UTF-8 text: byte ${bad} (0x${byte}) is not valid UTF-8; nothing was sent. To send a file as it is, add --base64 (agentmbx send … --body-file FILE --base64; the reader decodes it with base64 -d)`,
      'USAGE',
    );
  }
  return buffer.toString('utf8');
}

/** The bytes of the file at `path`, at most BODY_FILE_MAX_BYTES (a longer one is refused, not cut). */
export function readBodyFile(path: string): Uint8Array {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new CliError(`cannot read --body-file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, 'USAGE');
  }
  try {
    const size = fstatSync(fd).size;
    if (size > BODY_FILE_MAX_BYTES) throw new CliError(`--body-file ${path} is ${size} bytes: a body is at most ${MAX_BODY_BYTES} bytes`, 'USAGE');
    // a file that grows while read is read up to the cap + 1, to see that it is too long
    const buffer = Buffer.alloc(BODY_FILE_MAX_BYTES + 1);
    let length = 0;
    for (;;) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
      if (length > BODY_FILE_MAX_BYTES) throw new CliError(`--body-file ${path} is longer than ${MAX_BODY_BYTES} bytes`, 'USAGE');
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}
