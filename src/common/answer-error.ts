// How a refused HTTP call to a relay or a peer reads in a message.
import { isPlainObject } from '../protocol/validate.ts';

/** "HTTP 403: <the answer's `error`>", or "HTTP 502: no error text" when the body has none. */
export function errorText(answer: { status: number; body: unknown }): string {
  const error = isPlainObject(answer.body) && typeof answer.body.error === 'string' ? answer.body.error : 'no error text';
  return `HTTP ${answer.status}: ${error}`;
}
