/**
 * Canary test: secret values written through the API must never
 * come back in a response body, a log line, or what the database stores
 * (SQLite main file, WAL, shared memory; a dump of PostgreSQL) — in clear, base64 or hex.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { revealCurrent, secretsAccess } from '../../../helpers/catalog.ts';
import { testPostgres } from '../../../helpers/engine.ts';
import { startTestGateway, type TestGateway, type TestResponse } from '../../../helpers/gateway.ts';

const execFileAsync = promisify(execFile);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** What the database holds: the files of SQLite (its WAL too), or a plain pg_dump of the PostgreSQL database. */
async function stored(gw: TestGateway): Promise<[string, Buffer][]> {
  const files = filesUnder(gw.dataDir).map((file): [string, Buffer] => [file, readFileSync(file)]);
  const database = gw.gateway.deps.config.database;
  if (database === null) return files;
  const { binDir, password } = await testPostgres();
  const dump = await execFileAsync(join(binDir, 'pg_dump'), ['--data-only', '--dbname', database], {
    env: { ...process.env, PGPASSWORD: password },
    maxBuffer: 256 << 20,
    encoding: 'buffer',
  });
  return [['pg_dump', dump.stdout], ...files];
}

/** Scans what the database holds for the canaries, before and after a restart (which must still decrypt). */
async function scanStorage(gw: TestGateway, scan: (where: string, haystack: Buffer) => void, c2: string) {
  const before = await stored(gw);
  const onSqlite = gw.gateway.deps.config.database === null;
  assert.ok(!onSqlite || before.some(([file]) => file.endsWith('meshgate.db-wal')), 'the WAL is there to scan');
  for (const [file, bytes] of before) scan(file, bytes);
  // A dump holds live rows only; SQLite's files keep deleted ones too, so the control is a secret still there.
  assert.ok(
    before.some(([, bytes]) => bytes.includes('admin-canary')),
    'control: the scan reads the stored rows',
  );
  await gw.restart();
  assert.equal(revealCurrent(gw, 'urn:li:dataHubSecret:admin-canary'), c2, 'decrypts after a restart');
  for (const [file, bytes] of await stored(gw)) scan(`${file} after restart`, bytes);
}

function encodings(canary: string): Buffer[] {
  const raw = Buffer.from(canary, 'utf8');
  return [
    raw,
    Buffer.from(raw.toString('base64')),
    Buffer.from(raw.toString('base64url')),
    Buffer.from(raw.toString('hex')),
    Buffer.from(canary, 'utf16le'),
  ];
}

test('canary secret values appear in no response, no log line and no database file', async (t) => {
  const gw = await startTestGateway(t, { logLevel: 'trace', limits: { maxBodyBytes: 200_000 } });
  const canaries = [
    `CANARY-${randomUUID()}`,
    `CÄNÄRY-ünïcødé-${randomUUID()}-🚀`,
    `LONGCANARY-${randomUUID()}-${'x'.repeat(60_000)}`,
  ];
  const markers = canaries.map((c) => c.slice(0, 48));
  // Metadata is stored in clear (the scan below finds a secret's name as its control).
  const description = `DESCRIPTION-${randomUUID()}`;
  const responses: TestResponse[] = [];
  const call = async (method: string, path: string, options: Parameters<typeof gw.request>[2] = {}) => {
    const res = await gw.request(method, path, options);
    responses.push(res);
    return res;
  };
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const [c0, c1, c2] = canaries as [string, string, string];

  // Happy paths.
  const urns: string[] = [];
  for (const [i, value] of canaries.entries()) {
    const res = await call('POST', '/api/catalog/secrets/?clobber=false', {
      token: alice.token,
      json: { name: `canary-${i}`, value, description },
    });
    assert.equal(res.status, 201);
    urns.push(res.json);
  }
  assert.equal(
    (
      await call('POST', '/api/catalog/secrets/?clobber=true', {
        token: alice.token,
        json: { name: 'canary-0', value: c1 },
      })
    ).status,
    201,
  );
  assert.equal(
    (
      await call('POST', '/api/catalog/secrets', {
        token: admin,
        json: { name: 'admin-canary', value: c2, owner: 'urn:li:corpuser:bob' },
      })
    ).status,
    201,
  );
  for (const urn of urns) {
    for (const path of [
      `/api/catalog/secrets/v2/${encodeURIComponent(urn)}`,
      `/api/catalog/secrets/v2/${urn}`,
      `/api/catalog/secrets/by-urn?urn=${encodeURIComponent(urn)}`,
    ]) {
      for (const token of [alice.token, admin, bob.token]) await call('GET', path, { token });
    }
  }
  for (const token of [alice.token, bob.token, admin]) {
    await call('GET', '/api/catalog/secrets/', { token });
    await call('GET', '/api/catalog/secrets/?query=canary', { token });
  }
  // Error paths, each carrying a canary in the request.
  const bad = [
    {
      status: 409,
      token: alice.token,
      path: '/api/catalog/secrets/?clobber=false',
      json: { name: 'canary-1', value: c0 },
    },
    {
      status: 409,
      token: bob.token,
      path: '/api/catalog/secrets/?clobber=true',
      json: { name: 'canary-1', value: c0 },
    },
    {
      status: 403,
      token: bob.token,
      path: '/api/catalog/secrets/',
      json: { name: 'n1', value: c0, owner: 'urn:li:corpuser:alice' },
    },
    {
      status: 422,
      token: admin,
      path: '/api/catalog/secrets/',
      json: { name: 'n2', value: c0, owner: 'urn:li:corpuser:ghost' },
    },
    { status: 422, token: alice.token, path: '/api/catalog/secrets/?clobber=perhaps', json: { name: 'n3', value: c0 } },
    { status: 422, token: alice.token, path: '/api/catalog/secrets/', json: { name: 'n4', value: { nested: c0 } } },
    { status: 422, token: alice.token, path: '/api/catalog/secrets/', json: { name: 'n5', value: [c1] } },
    {
      status: 422,
      token: alice.token,
      path: '/api/catalog/secrets/',
      json: { name: 'n6', value: `${c0}${'y'.repeat(70_000)}` },
    },
    { status: 422, token: alice.token, path: '/api/catalog/secrets/', json: { name: 'ctl\u0000', value: c0 } },
    { status: 422, token: alice.token, path: '/api/catalog/secrets/', json: { value: c0 } },
    { status: 401, token: null, path: '/api/catalog/secrets/', json: { name: 'n7', value: c0 } },
    { status: 401, token: 'not-a-token', path: '/api/catalog/secrets/', json: { name: 'n8', value: c0 } },
    { status: 405, token: alice.token, path: `/api/catalog/secrets/v2/${urns[0]}`, json: { name: 'n9', value: c0 } },
    {
      status: 413,
      token: alice.token,
      path: '/api/catalog/secrets/',
      json: { name: 'n10', value: c0.repeat(10).padEnd(300_000, c0) },
    },
  ];
  for (const b of bad) {
    const res = await call('POST', b.path, { token: b.token, json: b.json });
    assert.equal(res.status, b.status, `${b.path} ${JSON.stringify(b.json).slice(0, 80)}`);
  }
  const broken = await call('POST', '/api/catalog/secrets/', {
    token: alice.token,
    body: `{"name":"x","value":"${c0}"`,
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(broken.status, 422);
  const form = await call('POST', '/api/catalog/secrets/', { token: alice.token, form: { name: 'f', value: c0 } });
  assert.equal(form.status, 422);
  // Secrets referenced from datasets, allowed and refused.
  assert.equal(
    (
      await call('POST', '/api/catalog/datasets/', {
        token: bob.token,
        json: { name: 'd', platform: 'postgres', properties: { password: urns[1] } },
      })
    ).status,
    403,
  );
  assert.equal(
    (
      await call('POST', '/api/catalog/datasets/', {
        token: alice.token,
        json: { name: 'd', platform: 'postgres', properties: { password: urns[1] } },
      })
    ).status,
    201,
  );
  // In-process consumers do get the values (and must not print them).
  assert.equal(revealCurrent(gw, urns[0] as string), c1);
  assert.equal(revealCurrent(gw, urns[2] as string), c2);
  assert.throws(
    () => secretsAccess(gw).reveal('urn:li:dataHubSecret:none'),
    (e: Error) => !canaries.some((c) => e.message.includes(c)),
  );
  // Deletes, by both forms, by the wrong user first.
  for (const [i, urn] of urns.entries()) {
    const path =
      i % 2 ? `/api/catalog/secrets/by-urn?urn=${encodeURIComponent(urn)}` : `/api/catalog/secrets/v2/${urn}`;
    assert.equal((await call('DELETE', path, { token: bob.token })).status, 404);
    assert.equal((await call('DELETE', path, { token: alice.token })).status, 204);
  }

  const scan = (where: string, haystack: Buffer) => {
    for (const [i, marker] of markers.entries()) {
      for (const needle of encodings(marker))
        assert.equal(haystack.indexOf(needle), -1, `canary ${i} found in ${where}`);
    }
  };
  assert.ok(responses.length > 60, 'the scan covers every call');
  for (const res of responses) scan(`response ${res.status} ${res.text.slice(0, 60)}`, Buffer.from(res.text));
  assert.ok(gw.logs.length > responses.length, 'trace logging captured every request');
  scan('gateway logs', Buffer.from(gw.logs.join('\n')));
  await scanStorage(gw, scan, c2);
});
