// The base of the host's own errors: a sentence for the user and, when it is one of the kinds a
// caller sorts by (the CLI's exit codes), that kind.

/** invalid: the request itself is malformed (a bad value the caller must change) */
export type FailureKind = 'invalid' | 'not-found' | 'not-paired' | 'unreachable';

export class HostError extends Error {
  readonly kind: FailureKind | null;
  constructor(message: string, kind: FailureKind | null = null) {
    super(message);
    this.kind = kind;
  }
}
