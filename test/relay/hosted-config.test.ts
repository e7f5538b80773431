// Config keys of the hosted relay (docs/hosted-relay.md): enrolment_authority and the token settings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, parseConfigFile, resolveRelayConfig } from '../../src/relay/config.ts';

const fromFile = (json: string) => resolveRelayConfig({ file: parseConfigFile(json, 'relay.json'), env: {} });
const HOSTED = {
  enrolment_authority: 'account-token',
  token_issuer: 'https://accounts.agentmbx.com',
  token_jwks_url: 'https://accounts.agentmbx.com/.well-known/jwks.json',
  token_audience: 'https://relay.agentmbx.com',
};

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

test('host-key is the default and adds no account-token settings', () => {
  assert.equal(fromFile('{}').account_token, undefined);
  assert.equal(fromFile('{"enrolment_authority": "host-key"}').account_token, undefined);
});

test('account-token carries the issuer, JWKS URL and audience', () => {
  assert.deepEqual(fromFile(JSON.stringify(HOSTED)).account_token, {
    token_issuer: HOSTED.token_issuer,
    token_jwks_url: HOSTED.token_jwks_url,
    token_audience: HOSTED.token_audience,
  });
  const loopback = { ...HOSTED, token_jwks_url: 'http://127.0.0.1:8080/jwks' };
  assert.equal(fromFile(JSON.stringify(loopback)).account_token?.token_jwks_url, 'http://127.0.0.1:8080/jwks');
});

test('bad or missing settings stop start-up with a message that never echoes a string', () => {
  assert.match(
    configError(() => fromFile('{"enrolment_authority": "oauth"}')),
    /enrolment_authority must be "host-key" or "account-token" \(got a string\)/,
  );
  assert.match(
    configError(() => fromFile(JSON.stringify({ ...HOSTED, token_audience: undefined }))),
    /needs token_audience/,
  );
  assert.match(
    configError(() => fromFile('{"token_issuer": "https://x"}')),
    /only apply with enrolment_authority "account-token"/,
  );
  assert.match(
    configError(() => fromFile(JSON.stringify({ ...HOSTED, token_jwks_url: 'http://accounts.example/jwks' }))),
    /must use https/,
  );
  const secret = 'not-a-url-but-a-secret';
  const message = configError(() => fromFile(JSON.stringify({ ...HOSTED, token_jwks_url: secret })));
  assert.match(message, /absolute URL/);
  assert.ok(!message.includes(secret));
  assert.match(
    configError(() => fromFile(JSON.stringify({ ...HOSTED, token_issuer: '' }))),
    /non-empty string/,
  );
  assert.match(
    configError(() => fromFile(JSON.stringify({ ...HOSTED, token_issuer: 7 }))),
    /non-empty string .*got 7/,
  );
});
