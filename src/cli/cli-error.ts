/** An error the CLI reports as one line on stderr, exiting with `exitCode`. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1, options?: ErrorOptions) {
    super(message, options);
    this.exitCode = exitCode;
  }
}
