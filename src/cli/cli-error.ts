import { EXIT_CODES, type ExitName } from './exit-codes.ts';

/** An error the CLI reports as one line (stderr, or JSON on stdout with --json), exiting with its code. */
export class CliError extends Error {
  readonly code: ExitName;
  /** the JSON already printed says what failed (doctor's report): with --json nothing more is printed */
  readonly inJsonOutput: boolean;
  /** `options.cause`: the error behind it (a disk fault under it is named by runCli) */
  constructor(message: string, code: ExitName = 'FAILURE', inJsonOutput = false, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.inJsonOutput = inJsonOutput;
  }

  get exitCode(): number {
    return EXIT_CODES[this.code];
  }
}
