// The request log's levels, apart from the log itself (logging.ts): a group's primary checks
// --log-level but writes no request log, so it does not load pino (docs/relay-operator.md "Memory").

/** Levels an operator can pick (--log-level, MBX_RELAY_LOG_LEVEL): debug adds one line per successful poll. */
export const RELAY_LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type RelayLogLevel = (typeof RELAY_LOG_LEVELS)[number];

export function isRelayLogLevel(text: string): text is RelayLogLevel {
  return (RELAY_LOG_LEVELS as readonly string[]).includes(text);
}
