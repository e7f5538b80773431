// Why a fetch() got no answer, in words a person can act on: the system error of its cause
// (ECONNREFUSED, ENOTFOUND, EHOSTUNREACH…), a timeout, or the error's own message.

export function fetchFailureText(err: unknown): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) return 'no answer in time';
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  // system errors by their code (ECONNREFUSED…); undici's own (UND_ERR_SOCKET…) by their message
  if (typeof cause?.code === 'string' && /^E[A-Z]+$/.test(cause.code)) return cause.code;
  if (typeof cause?.message === 'string' && cause.message !== '') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
