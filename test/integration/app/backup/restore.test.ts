/**
 * The restore drill: `meshgate backup` (a real process) while acknowledged
 * writes stream through the API, `meshgate restore` into a new data dir, a
 * gateway started on it. Every write acknowledged before the backup began
 * is there, tokens issued before still work (same keys, same issuer), and
 * the secrets decrypt with the KEK the operator supplies, which the backup
 * itself never holds. Also: the serve lock, and GET /api/ready.
 */
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirInUseError, holdRestoreLock } from '../../../../gateway/db/serve-lock.ts';
import { filesWithModes, meshgate } from '../../../helpers/backup.ts';
import { revealCurrent } from '../../../helpers/catalog.ts';
import { type After, startTestGateway, TestGateway } from '../../../helpers/gateway.ts';

/** Bounds of the write loop: it stops when the backup ends, or at these. */
const MAX_WRITES = 5000;
const MAX_LOOP_MS = 120_000;
const WRITES_BEFORE_BACKUP = 25;

function scratchDir(t: After, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `meshgate-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startOn(t: After, dataDir: string, overrides = {}): Promise<TestGateway> {
  const gw = new TestGateway(dataDir, overrides);
  t.after(() => gw.stop().catch(() => {}));
  return gw.start();
}

interface Acked {
  urn: string;
  value: string;
  /** Sequence number of the acknowledgement; compared with the one taken when the backup started. */
  seq: number;
}

test(
  'restore drill: backup under write load, restore into a new dir, every ' +
    'write acknowledged before the backup is back',
  async (t) => {
    const source = await startTestGateway(t);
    const admin = await source.adminToken();
    const acked: Acked[] = [];
    let seq = 0;
    let backupRunning = true;
    let backupStartSeq = -1;
    let seenBeforeBackup: () => void = () => {};
    const enoughBeforeBackup = new Promise<void>((resolve) => {
      seenBeforeBackup = resolve;
    });
    const deadline = Date.now() + MAX_LOOP_MS;
    const load = (async () => {
      for (let i = 0; backupRunning && i < MAX_WRITES && Date.now() < deadline; i++) {
        const value = `value-${i}-${'é'.repeat(i % 7)}`;
        const res = await source.request('POST', '/api/catalog/secrets/', {
          token: admin,
          json: { name: `load/${i}`, value },
        });
        assert.equal(res.status, 201, res.text);
        acked.push({ urn: res.json, value, seq: seq++ });
        if (acked.length === WRITES_BEFORE_BACKUP) seenBeforeBackup();
      }
    })();
    await enoughBeforeBackup;
    const backupDir = join(scratchDir(t, 'backups'), 'nightly');
    backupStartSeq = seq; // every write acknowledged so far precedes the backup's start
    const backup = await meshgate(['backup', backupDir, '--data-dir', source.dataDir]);
    backupRunning = false;
    await load;
    assert.equal(backup.code, 0, backup.stderr);
    assert.match(backup.stdout, /not included: the key-encryption keys\. Its secrets need kek-v1\.key from /);
    assert.ok(acked.length > backupStartSeq, 'writes went on while the backup ran');

    const kekText = readFileSync(join(source.dataDir, 'keys', 'kek', 'kek-v1.key'), 'utf8').trim();
    const files = filesWithModes(backupDir);
    assert.ok(
      files.some((f) => f.path === 'keys/signing-key.jwk.json') && files.some((f) => f.path === 'tls/ca-key.pem'),
    );
    assert.ok(
      files.some((f) => f.path === 'issuer'),
      'the issuer file, so restored tokens keep their iss',
    );
    for (const { path, mode } of files) {
      assert.equal(mode, 0o600, path);
      assert.ok(
        !path.includes('kek') && !readFileSync(join(backupDir, path)).includes(kekText),
        `${path} holds no KEK`,
      );
    }

    // The operator restores on a new host and supplies the KEK from where it is kept, apart from the backup.
    const restoredDir = join(scratchDir(t, 'restored'), 'data');
    const kekDir = join(scratchDir(t, 'kek'), 'kek');
    mkdirSync(kekDir, { mode: 0o700 });
    const withoutKek = await meshgate(['restore', backupDir, '--data-dir', restoredDir], {
      PLATFORM_SECRETS_KEK_DIR: kekDir,
    });
    assert.equal(withoutKek.code, 0, withoutKek.stderr);
    assert.match(withoutKek.stdout, new RegExp(`KEK ${join(kekDir, 'kek-v1.key')}: missing`));
    assert.match(withoutKek.stderr, /before start, put the KEK files/);
    copyFileSync(join(source.dataDir, 'keys', 'kek', 'kek-v1.key'), join(kekDir, 'kek-v1.key'));
    chmodSync(join(kekDir, 'kek-v1.key'), 0o600);
    const again = await meshgate(['restore', backupDir, '--data-dir', restoredDir, '--force'], {
      PLATFORM_SECRETS_KEK_DIR: kekDir,
    });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /kek-v1\.key: ok/);

    const restored = await startOn(t, restoredDir, { secrets: { kekDir } });
    assert.equal((await restored.request('GET', '/api/ready')).status, 200);
    const before = acked.filter((a) => a.seq < backupStartSeq);
    for (const { urn, value } of before)
      assert.equal(revealCurrent(restored, urn), value, `${urn} acknowledged before the backup`);
    const list = await restored.request('GET', '/api/catalog/secrets/', { token: admin });
    assert.equal(list.status, 200, 'the admin token issued by the source gateway before the backup still works');
    const present = new Set(list.json.map((s: { urn: string }) => s.urn));
    assert.ok(
      present.size >= before.length && present.size <= acked.length + 1,
      `${present.size} restored of ${acked.length}`,
    );
    for (const { urn, value } of acked) if (present.has(urn)) assert.equal(revealCurrent(restored, urn), value, urn);
    assert.equal((await restored.request('GET', '/api/catalog/secrets/', { token: `${admin}x` })).status, 401);
  },
);

test(
  'serve lock: gateways share a data dir, a restore waits for none of ' + 'them; a running restore keeps serve out',
  async (t) => {
    const first = await startTestGateway(t);
    // Several processes serve one data dir (workers, nodes): each holds the lock shared.
    const second = new TestGateway(first.dataDir, {});
    t.after(() => second.stop().catch(() => {}));
    await second.start();
    assert.equal((await second.request('GET', '/api/ping')).status, 200);
    const restore = await meshgate(['restore', scratchDir(t, 'any'), '--data-dir', first.dataDir]);
    assert.equal(restore.code, 1);
    assert.match(restore.stderr, /another meshgate is serving/);
    assert.equal((await first.request('GET', '/api/ready')).status, 200, 'the gateways are untouched');
    await first.stop();
    await second.stop();
    const restoring = holdRestoreLock(first.dataDir);
    await assert.rejects(
      first.start(),
      (error: unknown) => error instanceof DataDirInUseError && /a restore is writing/.test(error.message),
    );
    restoring.release();
    await first.start();
    assert.equal((await first.request('GET', '/api/ping')).status, 200);
  },
);

test(
  'readiness: GET /api/ready queries the database; 503 ' + 'database_unavailable when it cannot, ping stays 200',
  async (t) => {
    const gw = await startTestGateway(t);
    const ready = await gw.request('GET', '/api/ready');
    assert.equal(ready.status, 200);
    assert.equal(ready.json.status, 'ready');
    gw.gateway.deps.sql.close();
    const down = await gw.request('GET', '/api/ready');
    assert.equal(down.status, 503);
    assert.equal(down.json.detail.reason, 'database_unavailable');
    assert.doesNotMatch(down.text, /connection|sqlite|stack/i, 'the cause is logged, not sent');
    assert.ok(gw.logs.some((line) => line.includes('database_unavailable') && line.includes('not open')));
    assert.equal((await gw.request('GET', '/api/ping')).status, 200, 'liveness: the process still answers');
  },
);
