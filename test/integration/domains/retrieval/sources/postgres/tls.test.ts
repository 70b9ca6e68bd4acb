/**
 * TLS to PostgreSQL (docs/retrieval.md, "Postgres TLS"): a real cluster
 * whose pg_hba takes TCP connections over TLS only, with a certificate for
 * `localhost` alone from a test CA (the gateway's own trust material code).
 * Every mode verifies the chain; verify-full also the name; a clear-text
 * connection is refused by the server, so rows that arrive went over TLS.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ensureTlsMaterial } from '../../../../../../gateway/tls/material.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { startPostgres } from '../../../../../helpers/peers/postgres.ts';
import {
  createDataset,
  createJob,
  createSecret,
  eventually,
  readSse,
  sseRows,
} from '../../../../../helpers/retrieval.ts';

const ROWS = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, label: `r${i + 1}` }));

async function world(t: { after(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'meshgate-pgtls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await ensureTlsMaterial({ tlsDir: join(dir, 'ca'), names: ['localhost'], clusterName: 'pg-test' });
  const other = await ensureTlsMaterial({ tlsDir: join(dir, 'other'), names: ['localhost'], clusterName: 'pg-other' });
  const pg = await startPostgres(t, {
    ssl: { certFile: join(dir, 'ca', 'server.pem'), keyFile: join(dir, 'ca', 'server-key.pem') },
    sslOnly: true,
  });
  await pg.psql(
    `CREATE TABLE items (id int, label text); INSERT INTO items SELECT i, ` +
      `'r' || i FROM generate_series(1, 20) i;
    CREATE VIEW slow AS SELECT i AS id FROM generate_series(1, 1000000) i WHERE length(pg_sleep(0.001)::text) = 0;`,
  );
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = (name: string, value: string) => createSecret(gw, admin, name, value);
  const credentials = await secret('pg-creds', JSON.stringify({ user: pg.user, password: pg.password }));
  let n = 0;
  /** A dataset on `items` with these connection properties. */
  const dataset = (properties: Record<string, unknown>) =>
    createDataset(gw, admin, {
      name: `dataset-${++n}`,
      platform: 'postgres',
      properties: { port: pg.port, database: pg.database, secret_urn: credentials, table: 'items', ...properties },
    });
  const read = (urn: string) => gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn } });
  return { gw, pg, admin, ca: server.caPem, otherCa: other.caPem, secret, dataset, read };
}

type World = Awaited<ReturnType<typeof world>>;

/** The job's refusal: status, reason and problem; its text holds no certificate or password. */
async function refusal(w: World, urn: string) {
  const res = await w.read(urn);
  assert.doesNotMatch(res.text, /BEGIN CERTIFICATE|PRIVATE KEY/);
  assert.ok(!res.text.includes(w.pg.password));
  return { status: res.status, reason: res.json.detail.reason, problem: res.json.detail.problem };
}

test('verify-full checks the name, verify-ca and require the chain only; rows arrive over TLS', async (t) => {
  const w = await world(t);
  const full = await w.dataset({ host: 'localhost', sslmode: 'verify-full', sslrootcert: w.ca });
  assert.deepEqual((await createJob(w.gw, w.admin, { dataset_urn: full })).inline.data, ROWS);
  const sse = await readSse(
    w.gw,
    (await createJob(w.gw, w.admin, { dataset_urn: full, transport: 'sse', batch_size: 7 })).job_id,
    w.admin,
  );
  assert.deepEqual(sseRows(sse), ROWS);

  // The certificate names localhost only: by IP address the name check fails, the chain check alone passes.
  const byIp = await w.dataset({ host: '127.0.0.1', sslmode: 'verify-full', sslrootcert: w.ca });
  assert.deepEqual(await refusal(w, byIp), {
    status: 502,
    reason: 'source_tls_failed',
    problem: 'tls verification failed',
  });
  for (const sslmode of ['verify-ca', 'require']) {
    const urn = await w.dataset({ host: '127.0.0.1', sslmode, sslrootcert: w.ca });
    assert.deepEqual((await createJob(w.gw, w.admin, { dataset_urn: urn })).inline.data, ROWS, sslmode);
  }
  // A bundle: the signing CA need not come first, and text between certificates (a comment) is allowed.
  const bundle = await w.dataset({
    host: 'localhost',
    sslmode: 'verify-full',
    sslrootcert: `${w.otherCa}\n# the test CA\n${w.ca}`,
  });
  assert.deepEqual((await createJob(w.gw, w.admin, { dataset_urn: bundle })).inline.data, ROWS);

  // sslrootcert as a catalog secret holding the PEM.
  const fromSecret = await w.dataset({
    host: 'localhost',
    sslmode: 'verify-full',
    sslrootcert: await w.secret('pg-ca', w.ca),
  });
  assert.deepEqual((await createJob(w.gw, w.admin, { dataset_urn: fromSecret })).inline.data, ROWS);

  // A cancel reaches the server without TLS (as libpq's does) and stops a statement that sends nothing yet.
  const slow = await w.dataset({ host: 'localhost', sslmode: 'verify-full', sslrootcert: w.ca, table: 'slow' });
  const job = await createJob(w.gw, w.admin, { dataset_urn: slow, transport: 'sse' });
  const reading = readSse(w.gw, job.job_id, w.admin);
  const active = async () =>
    Number(
      await w.pg.psql(
        `SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING ` +
          `(pid) WHERE s.ssl AND a.state = 'active' AND a.query LIKE 'COPY%slow%'`,
      ),
    );
  await eventually(async () => (await active()) === 1, 'the COPY to run over TLS');
  assert.equal(
    (await w.gw.request('POST', `/api/retrieval/jobs/${job.job_id}/cancel`, { token: w.admin })).json.status,
    'CANCELED',
  );
  await reading;
  await eventually(async () => (await active()) === 0, 'the statement to be canceled on the server');
});

test(
  'a certificate from another CA, or none to verify against, fails every ' +
    'mode; clear text is refused by the server',
  async (t) => {
    const w = await world(t);
    const tlsFailed = { status: 502, reason: 'source_tls_failed', problem: 'tls verification failed' };
    for (const sslmode of ['require', 'verify-ca', 'verify-full']) {
      assert.deepEqual(
        await refusal(w, await w.dataset({ host: 'localhost', sslmode, sslrootcert: w.otherCa })),
        tlsFailed,
        sslmode,
      );
      // No sslrootcert: the gateway's default CA store, which does not hold the test CA.
      assert.deepEqual(
        await refusal(w, await w.dataset({ host: 'localhost', sslmode })),
        tlsFailed,
        `${sslmode} without sslrootcert`,
      );
    }
    for (const clear of [{}, { sslmode: 'disable', sslrootcert: w.ca }]) {
      const refused = await refusal(w, await w.dataset({ host: 'localhost', ...clear }));
      assert.deepEqual(
        refused,
        { status: 403, reason: 'source_auth_failed', problem: 'authentication failed' },
        JSON.stringify(clear),
      );
    }
    assert.ok(!w.gw.logs.join('').includes('BEGIN CERTIFICATE'), 'no certificate text in a log line');
  },
);

test('an unknown sslmode or an sslrootcert that is not a certificate is refused before any connection', async (t) => {
  const w = await world(t);
  const cases = [
    [{ sslmode: 'prefer' }, 'sslmode'],
    [{ sslmode: 'allow' }, 'sslmode'],
    [{ sslmode: 'VERIFY-FULL' }, 'sslmode'],
    [{ sslmode: 1 }, 'sslmode'],
    [{ sslmode: 'verify-ca', sslrootcert: 'not a certificate' }, 'sslrootcert'],
    // A bundle whose second certificate is damaged: tls.connect would skip it without a word.
    [
      { sslmode: 'verify-ca', sslrootcert: `${w.ca}\n${w.ca.replace(/\n[A-Za-z0-9+/]{8}/, '\n!!!!!!!!')}` },
      'sslrootcert',
    ],
    // …or cut off before its END line (it would match no block at all).
    [{ sslmode: 'verify-ca', sslrootcert: `${w.ca}\n${w.ca.slice(0, 80)}` }, 'sslrootcert'],
  ] as const;
  for (const [properties, option] of cases) {
    // Port 1 has no listener: a connection attempt would answer 502, not 422.
    const res = await w.read(await w.dataset({ host: 'localhost', port: 1, ...properties }));
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.detail.reason, 'source_options_invalid');
    assert.equal(res.json.detail.option, option);
  }
  // An sslrootcert secret deleted after the dataset was made: the catalog refuses the use before any connection.
  const doomed = await w.secret('doomed-ca', w.ca);
  const orphan = await w.dataset({ host: 'localhost', port: 1, sslmode: 'verify-ca', sslrootcert: doomed });
  const deleted = await w.gw.request('DELETE', `/api/catalog/secrets/by-urn?urn=${encodeURIComponent(doomed)}`, {
    token: w.admin,
  });
  assert.ok(deleted.status < 300, deleted.text);
  const res = await w.read(orphan);
  assert.deepEqual(
    [res.status, res.json.detail.reason, res.json.detail.secret_urn],
    [409, 'secret_unavailable', doomed],
  );
  const unreachable = await w.read(
    await w.dataset({ host: 'localhost', port: 1, sslmode: 'verify-full', sslrootcert: w.ca }),
  );
  assert.equal(unreachable.status, 502, 'valid settings do connect');
});

test("the gateway's PGSSLMODE / PGSSLNEGOTIATION never change a dataset's TLS settings", async (t) => {
  const w = await world(t);
  const saved = { mode: process.env.PGSSLMODE, negotiation: process.env.PGSSLNEGOTIATION };
  t.after(() => {
    for (const [name, value] of [
      ['PGSSLMODE', saved.mode],
      ['PGSSLNEGOTIATION', saved.negotiation],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  process.env.PGSSLMODE = 'no-verify';
  process.env.PGSSLNEGOTIATION = 'direct';
  const verified = await w.dataset({ host: 'localhost', sslmode: 'verify-full', sslrootcert: w.ca });
  assert.deepEqual((await createJob(w.gw, w.admin, { dataset_urn: verified })).inline.data, ROWS);
  const unverified = await w.dataset({ host: 'localhost', sslmode: 'verify-full', sslrootcert: w.otherCa });
  assert.deepEqual(await refusal(w, unverified), {
    status: 502,
    reason: 'source_tls_failed',
    problem: 'tls verification failed',
  });
  const clear = await w.dataset({ host: 'localhost' });
  assert.deepEqual(await refusal(w, clear), {
    status: 403,
    reason: 'source_auth_failed',
    problem: 'authentication failed',
  });
});
