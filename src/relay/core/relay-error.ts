/**
 * A refusal the relay answers with an HTTP status and `{error, code?, …extra}` (protocol.md §3).
 * `error` is a sentence a person can act on; `code` is stable for programs to branch on.
 */
export class RelayError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly extra: Record<string, unknown>;
  constructor(status: number, error: string, code?: string, extra: Record<string, unknown> = {}) {
    super(error);
    this.status = status;
    this.code = code;
    this.extra = extra;
  }

  body(): Record<string, unknown> {
    return { error: this.message, ...(this.code === undefined ? {} : { code: this.code }), ...this.extra };
  }
}

export const badRequest = (error: string, code?: string): RelayError => new RelayError(400, error, code);
