// Times and durations as messages and records write them.

/** A time as ISO-8601 UTC with milliseconds, the form every record and log line uses. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** A duration for people: "42 s", "17 min", "3.5 h". */
export function ageText(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
