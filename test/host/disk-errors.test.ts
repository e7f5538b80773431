// Naming disk faults: SQLite's and node:fs's codes (also behind causes) map to full, read-only or
// io; a host's message names its home, the free space and the fix; other errors are left alone;
// the host, the relay store and the relay CLI word faults from one table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bytesText, diskFaultOf, diskFaultSentence, sqliteResultCode } from '../../src/common/disk-fault.ts';
import { diskFaultText, nameDiskError } from '../../src/host/store/disk-errors.ts';
import { StoreDiskError } from '../../src/relay/store/errors.ts';
import { tempDir } from '../helpers/processes.ts';

const SQLITE_FULL = 13;
const SQLITE_IOERR_WRITE = 778; // extended code: primary SQLITE_IOERR (10)
const SQLITE_READONLY = 8;
const SQLITE_CANTOPEN = 14;

test('disk faults are recognised from SQLite result codes and errno codes, also as a cause', () => {
  assert.equal(diskFaultOf({ errcode: SQLITE_FULL }), 'full');
  assert.equal(diskFaultOf({ errcode: SQLITE_IOERR_WRITE }), 'io');
  assert.equal(diskFaultOf({ errcode: SQLITE_READONLY }), null, 'a query_only connection raises it too');
  assert.equal(diskFaultOf(Object.assign(new Error('write'), { code: 'ENOSPC' })), 'full');
  assert.equal(diskFaultOf(Object.assign(new Error('write'), { code: 'EROFS' })), 'read-only');
  assert.equal(diskFaultOf(new Error('wrapped', { cause: new Error('inner', { cause: { code: 'EIO' } }) })), 'io');
  assert.equal(diskFaultOf(new Error('no such table')), null);
  assert.equal(diskFaultOf({ errcode: SQLITE_CANTOPEN }), null, 'cannot open is not by itself a disk fault');
  const cyclic: { cause?: unknown } = {};
  cyclic.cause = cyclic;
  assert.equal(diskFaultOf(cyclic), null, 'a cause cycle ends');
  assert.equal(sqliteResultCode(new Error('x', { cause: { errcode: SQLITE_IOERR_WRITE } })), 10);
  assert.equal(sqliteResultCode('text'), null);
});

test('sizes read as people write them', () => {
  assert.deepEqual([0, 1023, 1536, 20 * 1024 * 1024, 3.25 * 1024 ** 3].map(bytesText), ['0 bytes', '1023 bytes', '1.5 KiB', '20 MiB', '3.3 GiB']);
});

test('a host names a full disk with its home, the free space and the fix; other errors stay unnamed', () => {
  const home = tempDir('agentmbx-home-');
  assert.match(
    nameDiskError({ errcode: SQLITE_FULL }, home) ?? '',
    new RegExp(`^the disk holding ${home} is full \\(.+ free\\): free some space on it, then try again \\(nothing was half-written\\)$`),
  );
  assert.equal(
    nameDiskError({ errcode: SQLITE_IOERR_WRITE }, home),
    `the disk holding ${home} failed a read or write (I/O error): check the disk, then try again (nothing was half-written)`,
  );
  // the home is writable and has room: a file that cannot be opened is some other problem
  assert.equal(nameDiskError({ errcode: SQLITE_CANTOPEN }, home), null);
  assert.equal(nameDiskError({ errcode: SQLITE_READONLY }, home), null);
  assert.equal(nameDiskError(new Error('unexpected'), home), null);
});

test('one sentence table: the host, the relay store and the relay CLI say a fault the same way', () => {
  const home = tempDir('agentmbx-home-');
  const fix = { full: 'free some space on it', 'read-only': 'remount it read-write', io: 'check the disk' } as const;
  for (const fault of ['full', 'read-only', 'io'] as const) {
    assert.ok(diskFaultText(fault, home).includes(`: ${fix[fault]}`), diskFaultText(fault, home));
    assert.ok(diskFaultSentence(fault, { disk: 'the disk', afterwards: ', then try again' }).startsWith('the disk '));
  }
  assert.equal(
    new StoreDiskError('io', home).message,
    'the disk holding the relay store failed a read or write (I/O error): check the disk (or remount it read-write if it turned read-only); writes resume once one succeeds',
  );
  assert.match(
    new StoreDiskError('full', home).message,
    /^the disk holding the relay store is full \(.+ free\): free some space on it; writes resume by themselves$/,
  );
  assert.equal(diskFaultSentence('full', { disk: 'the disk', afterwards: ', then try again' }), 'the disk is full: free some space on it, then try again');
});
