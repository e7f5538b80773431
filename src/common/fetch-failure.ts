// Why a fetch() got no answer, in words a person can act on: the system error of its cause
// (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH…), a timeout, or the error's own message.

/** What fetch refuses before connecting: the Fetch standard's "bad ports" (9, 25, 6000…, kept off for safety). */
const BAD_PORT_TEXT = "fetch refuses this port (one of the Fetch standard's blocked ports, such as 9, 25 or 6000): serve on another port, such as 7374";
/** An https:// URL whose server answered without TLS (OpenSSL's own words are a dump no one can act on). */
const NO_TLS_TEXT = 'the TLS handshake failed, most likely because the server speaks plain HTTP: use its http:// URL (or put TLS in front of it)';

export function fetchFailureText(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === 'string' && /^ERR_SSL_(WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG|RECORD_LAYER_FAILURE|HTTP_REQUEST)$/.test(cause.code))
    return NO_TLS_TEXT;
  if (cause?.message === 'bad port') return BAD_PORT_TEXT;
  // system errors by their code (ECONNREFUSED…); undici's own (UND_ERR_SOCKET…) by their message
  if (typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code)) return cause.code;
  if (typeof cause?.message === 'string' && cause.message !== '') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
