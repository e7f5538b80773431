// TCP port numbers as the CLI, the relay's serve flags and a host's config.json take them.

const MAX_PORT = 65_535;

/** Whether `port` is a TCP port number; 0 asks for any free port. */
export function isValidPort(port: number): boolean {
  return Number.isInteger(port) && port >= 0 && port <= MAX_PORT;
}

/** A port written as plain decimal digits (no sign, fraction, exponent or hex), or null. */
export function portFromText(text: string): number | null {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  return isValidPort(port) ? port : null;
}
