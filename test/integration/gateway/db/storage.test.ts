/**
 * The gateway's files on disk: private to its user from the first start,
 * tightened on a later start when something loosened them, and a disk that
 * fills up answers 507 storage_full — on a real, small tmpfs the test
 * mounts and fills — then serves again once space is freed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway, TestGateway } from '../../../helpers/gateway.ts';

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** Every file under the key folders, with the database and its side files. */
function privateFiles(dataDir: string): string[] {
  const keyFiles = ['keys', 'tls'].flatMap((dir) =>
    readdirSync(join(dataDir, dir), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name)),
  );
  return [...['meshgate.db', 'meshgate.db-wal', 'meshgate.db-shm'].map((name) => join(dataDir, name)), ...keyFiles];
}

test(
  'the data dir is 0700 and the database, WAL, SHM and key files 0600; a ' +
    'loosened install is tightened at start and logged; a readable key ' +
    'stops start',
  async (t) => {
    const previousUmask = process.umask(0o022); // the common default: without care, new files would be 0644
    t.after(() => process.umask(previousUmask));
    const gw = await startTestGateway(t);
    const files = privateFiles(gw.dataDir);
    assert.ok(files.length >= 7, `database files and keys are all there: ${files.join(', ')}`);
    assert.equal(modeOf(gw.dataDir), 0o700);
    for (const file of files) assert.equal(modeOf(file), 0o600, file);

    await gw.stop();
    chmodSync(gw.dataDir, 0o755);
    chmodSync(join(gw.dataDir, 'keys'), 0o755);
    // A clean close removes the WAL and SHM; SQLite recreates them with the (tightened) database file's mode.
    const keysDir = join(gw.dataDir, 'keys');
    const isKey = (file: string) => file.startsWith(`${keysDir}/`);
    for (const file of files.filter((f) => existsSync(f) && !isKey(f))) chmodSync(file, 0o644);
    // A secret key readable by others may have been read: start refuses and names it rather than hiding it.
    const signingKey = files.find(isKey) as string;
    gw.logs.length = 0;
    chmodSync(signingKey, 0o644);
    await assert.rejects(
      gw.start(),
      (error: Error) => error.message.includes(signingKey) && /mode 0600/.test(error.message),
    );
    chmodSync(signingKey, 0o600);
    await gw.start();
    assert.equal(modeOf(gw.dataDir), 0o700);
    assert.equal(modeOf(join(gw.dataDir, 'keys')), 0o700);
    for (const file of files) assert.equal(modeOf(file), 0o600, file);
    const tightened = gw.logs.filter((line) => line.includes('storage permissions tightened'));
    assert.ok(
      tightened.some((line) => line.includes('"from":"0644"') && line.includes('meshgate.db"')),
      'each change is logged',
    );
    assert.equal((await gw.request('GET', '/api/ping')).status, 200);
  },
);

/** Writes 4 KiB blocks until the filesystem refuses with ENOSPC. */
function fillDisk(file: string): void {
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
  } finally {
    closeSync(fd);
  }
}

test(
  'a full disk answers 507 storage_full with nothing written, and the ' + 'gateway recovers when space returns',
  async (t) => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'meshgate-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', mountPoint]);
    const dataDir = join(mountPoint, 'data');
    mkdirSync(dataDir, { mode: 0o700 });
    const gw = new TestGateway(dataDir, {});
    t.after(async () => {
      try {
        await gw.stop();
      } finally {
        execFileSync('umount', [mountPoint]);
        rmSync(mountPoint, { recursive: true, force: true });
      }
    });
    await gw.start();
    const token = await gw.adminToken();
    const createPat = () => gw.request('POST', '/api/auth/pats', { token, json: { name: 'disk' } });
    assert.equal((await createPat()).status, 200);

    const filler = join(mountPoint, 'filler');
    fillDisk(filler);
    // The WAL may still have room for a few commits; each new one needs fresh pages, so the refusal comes within a few.
    let created = 1;
    let refused: Awaited<ReturnType<typeof createPat>> | null = null;
    for (let attempt = 0; attempt < 200 && refused === null; attempt++) {
      const res = await createPat();
      if (res.status === 200) created += 1;
      else refused = res;
    }
    assert.ok(refused, 'a write was refused once the disk was full');
    assert.equal(refused.status, 507, refused.text);
    assert.equal(refused.json.detail.reason, 'storage_full');
    assert.doesNotMatch(refused.text, /SQLITE|ENOSPC|meshgate\.db|at /, 'no driver error, path or stack in the answer');
    assert.equal((await gw.request('GET', '/api/ping')).status, 200, 'reads still work');

    unlinkSync(filler);
    const after = await createPat();
    assert.equal(after.status, 200, after.text);
    const listed = await gw.request('GET', '/api/auth/pats', { token });
    assert.equal(listed.json.pats.length, created + 1, 'the refused request left no partial row behind');
  },
);
