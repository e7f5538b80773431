// How a store URL appears in messages: scheme, user, host and database, never a password.

export function describeStoreUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username === '' ? '' : `${decodeURIComponent(parsed.username)}@`;
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the store URL (it does not parse)';
  }
}
