// Errors in one line that name the cause and the fix, and text a person can trust, through the real
// CLI: TLS against plain HTTP, a port fetch refuses, a PostgreSQL backup, a damaged store; subjects
// counted in code points; invisible characters escaped; agents' descriptions; the relay's start line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { runCli, tempDir } from '../helpers/processes.ts';
import { spawnRelay } from '../helpers/relay-process.ts';
import { E2E_TIMEOUT_MS, cli, newCliHost } from './host-helpers.ts';

test('relay set, relay backup and a damaged store fail in one line naming the cause and the fix', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const plain = createServer((_req, res) => res.end('not a relay'));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const port = (plain.address() as AddressInfo).port;
    const tls = await runCli(['relay', 'set', `https://127.0.0.1:${port}`], alpha.env);
    assert.deepEqual(
      [tls.code, tls.stderr],
      [
        5,
        `agentmbx: cannot reach the relay at https://127.0.0.1:${port}: the TLS handshake failed, ` +
          'most likely because the server speaks plain HTTP: use its http:// URL (or put TLS in front of it)\n',
      ],
    );
  } finally {
    plain.close();
  }
  const blocked = await runCli(['relay', 'set', 'http://127.0.0.1:9'], alpha.env);
  assert.deepEqual(
    [blocked.code, blocked.stderr],
    [
      5,
      'agentmbx: cannot reach the relay at http://127.0.0.1:9: fetch refuses this port ' +
        "(one of the Fetch standard's blocked ports, such as 9, 25 or 6000): serve on another port, such as 7374\n",
    ],
  );

  const pg = await runCli(['relay', 'backup', join(tempDir(), 'b.db'), '--store', 'postgres://relay@db.internal/agentmbx'], alpha.env);
  assert.deepEqual(
    [pg.code, pg.stderr],
    [
      2,
      'agentmbx: relay backup works on the SQLite store (--store-dir); a PostgreSQL store is handled with pg_dump: ' +
        'see "Backup and restore" in docs/postgres.md\n',
    ],
  );

  writeFileSync(join(alpha.env.MBX_HOME as string, 'host.db'), 'not a database, but text.'.repeat(300));
  const damaged = await runCli(['inbox', '--agent', 'ann'], alpha.env);
  assert.equal(damaged.code, 6);
  assert.match(
    damaged.stderr,
    /^agentmbx: cannot open the host store .*host\.db: file is not a database; stop the daemon, move the file aside \(mv host\.db host\.db\.damaged\) and put back your last copy of it; without one, the next command makes an empty store and this host must pair again\n$/,
  );
});

test('subjects count code points, invisible characters are shown escaped, descriptions are listed and updated', { timeout: E2E_TIMEOUT_MS }, async () => {
  const alpha = await newCliHost('alpha', ['ann']);
  const emoji = await runCli(['send', '--from', 'ann', '--to', 'ann', '--subject', '🙂'.repeat(200), '--body', 'b'], alpha.env);
  assert.equal(emoji.code, 0, `200 emoji are 200 characters: ${emoji.stderr}`);
  const over = await runCli(['send', '--from', 'ann', '--to', 'ann', '--subject', '🙂'.repeat(201), '--body', 'b'], alpha.env);
  assert.deepEqual(
    [over.code, over.stderr],
    [2, 'agentmbx: the subject is 201 characters: a subject is 1 to 200 characters (Unicode code points), not blank, without control characters\n'],
  );
  await cli(alpha, ['send', '--from', 'ann', '--to', 'ann', '--subject', 'pay\u200bnow', '--body', 'b']);
  assert.match(await cli(alpha, ['inbox', '--agent', 'ann']), / {2}ann@alpha {2}pay\\u200bnow\n$/);

  assert.equal(await cli(alpha, ['agents', 'add', 'ann', '--description', 'reviews pull requests']), 'updated ann: description set\n');
  assert.equal(await cli(alpha, ['agents', 'add', 'ann']), 'ann exists (nothing to change)\n');
  assert.equal(await cli(alpha, ['agents']), 'ann  reviews pull requests\nowner\n');
});

test('a relay on every interface names a URL hosts can use in its start line', { timeout: E2E_TIMEOUT_MS }, async () => {
  const relay = await spawnRelay(tempDir('mbx-relay-'), { args: ['--bind', '0.0.0.0'] });
  try {
    const line =
      relay.child
        .stdout()
        .split('\n')
        .find((l) => l.includes('listening on')) ?? '';
    assert.match(
      line,
      /^agentmbx relay listening on http:\/\/0\.0\.0\.0:(\d+) fingerprint \S+ epoch \S+ \(every interface: hosts on this network reach it at http:\/\/(\d+\.){3}\d+:\1\)$/,
    );
    assert.doesNotMatch(line, /reach it at http:\/\/0\.0\.0\.0/);
  } finally {
    relay.child.kill('SIGTERM');
    await relay.child.exited;
  }
});
