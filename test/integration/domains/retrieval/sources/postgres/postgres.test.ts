/**
 * Retrieval from a real PostgreSQL (throwaway cluster from the Debian
 * package): credentials from a catalog secret, every transport yields the
 * same rows, pushdown semantics, SQL injection attempts harmless, cancel
 * and client disconnect stop the server-side read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../../../helpers/gateway.ts';
import { type PostgresPeer, startPostgres } from '../../../../../helpers/peers/postgres.ts';
import {
  createDataset,
  createJob,
  eventually,
  grantViewer,
  grpcRows,
  readGrpc,
  readSse,
  sseRows,
  V1,
} from '../../../../../helpers/retrieval.ts';

const REGIONS = ['north', 'south', 'east'];
const expectedRow = (i: number) => ({ id: i, region: REGIONS[i % 3], amount: (i * 37) % 1000, 'odd "col"': `v${i}` });

interface World {
  gw: TestGateway;
  pg: PostgresPeer;
  admin: string;
  alice: string;
  urn: string;
  bigUrn: string;
  wideUrn: string;
  slowUrn: string;
}

async function world(t: { after(fn: () => unknown): void }): Promise<World> {
  const pg = await startPostgres(t);
  await pg.psql(
    `
    CREATE TABLE items (id int, region text, amount int, "odd ""col""" text);
    INSERT INTO items SELECT i, (ARRAY['north','south','east'])[i % 3 ` +
      `+ 1], (i * 37) % 1000, 'v' || i FROM generate_series(1, 5000) i;
    CREATE TABLE big (id int, payload text);
    INSERT INTO big SELECT i, repeat('x', 40) FROM generate_series(1, 300000) i;
    CREATE TABLE wide (id int, payload text);
    INSERT INTO wide SELECT i, repeat('y', 3000) FROM generate_series(1, 1000) i;
    CREATE VIEW slow AS SELECT id + 0 * length(pg_sleep(0.001)::text) AS id FROM big;`,
  );
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = await gw.request('POST', '/api/catalog/secrets/', {
    token: admin,
    json: { name: 'pg-creds', value: JSON.stringify({ user: pg.user, password: pg.password }) },
  });
  assert.equal(secret.status, 201, secret.text);
  const properties = { host: pg.host, port: pg.port, database: pg.database, secret_urn: secret.json };
  const urn = await createDataset(gw, admin, { name: 'items', platform: 'postgres', properties });
  const bigUrn = await createDataset(gw, admin, { name: 'big', platform: 'postgres', properties });
  const wideUrn = await createDataset(gw, admin, { name: 'wide', platform: 'postgres', properties });
  const slowUrn = await createDataset(gw, admin, { name: 'slow', platform: 'postgres', properties });
  const alice = await gw.userToken('alice');
  for (const dataset of [urn, bigUrn, wideUrn, slowUrn]) grantViewer(gw, dataset, alice.id);
  return { gw, pg, admin, alice: alice.token, urn, bigUrn, wideUrn, slowUrn };
}

const backends = async (pg: PostgresPeer, jobId: string) =>
  Number(await pg.psql(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'meshgate-retrieval:${jobId}'`));

test('Postgres rows are identical through inline, SSE and gRPC; pushdown semantics hold', async (t) => {
  const { gw, alice, urn } = await world(t);
  const all = Array.from({ length: 5000 }, (_, i) => expectedRow(i + 1));
  const inline = await createJob(gw, alice, { dataset_urn: urn });
  assert.equal(inline.transport, 'inline');
  assert.deepEqual(inline.inline.data, all);
  assert.deepEqual(inline.dataset, {
    urn,
    platform: 'postgres',
    path: null,
    format: 'table',
    estimated_bytes: null,
    estimated_rows: null,
  });
  const sse = await readSse(
    gw,
    (await createJob(gw, alice, { dataset_urn: urn, transport: 'sse', batch_size: 700 })).job_id,
    alice,
  );
  assert.deepEqual(sseRows(sse), all);
  assert.equal(sse.events.filter((e) => e.event === 'chunk').length, 8);
  assert.deepEqual(
    grpcRows(
      await readGrpc(gw, await createJob(gw, alice, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 })),
    ),
    all,
  );

  const body = {
    filters: { region: ['north', 'east'], amount: [74, 111, 148] },
    columns: ['amount', 'odd "col"', 'id'],
    offset: 3,
    limit_rows: 7,
  };
  const expected = all
    .filter((r) => r.region !== 'south' && [74, 111, 148].includes(r.amount))
    .slice(3, 10)
    .map((r) => ({ amount: r.amount, 'odd "col"': r['odd "col"'], id: r.id }));
  assert.ok(expected.length === 7);
  const filtered = await createJob(gw, alice, { dataset_urn: urn, ...body });
  assert.deepEqual(filtered.inline.data, expected);
  assert.deepEqual(
    sseRows(
      await readSse(gw, (await createJob(gw, alice, { dataset_urn: urn, ...body, transport: 'sse' })).job_id, alice),
    ),
    expected,
  );
  const nulls = await createJob(gw, alice, { dataset_urn: urn, filters: { region: null } });
  assert.deepEqual(nulls.inline.data, []);
});

test(
  'gRPC: default batch is 10x the configured one, a batch over 1 MiB of ' + 'JSON is split, resume from a sequence',
  async (t) => {
    const { gw, alice, bigUrn, wideUrn } = await world(t);
    const big = await readGrpc(
      gw,
      await createJob(gw, alice, { dataset_urn: bigUrn, transport: 'grpc', grpc_protocol: V1 }),
    );
    assert.deepEqual(
      big.chunks.map((c) => c.rows.length),
      [...Array.from({ length: 30 }, () => 10_000), 0],
    );
    assert.deepEqual(
      grpcRows(big).map((r) => r.id),
      Array.from({ length: 300_000 }, (_, i) => i + 1),
    );

    const job = await createJob(gw, alice, { dataset_urn: wideUrn, transport: 'grpc', grpc_protocol: V1 });
    const wide = await readGrpc(gw, job);
    assert.deepEqual(
      wide.chunks.map((c) => [c.sequence, c.rows.length, c.final]),
      [
        [1, 250, false],
        [2, 250, false],
        [3, 250, false],
        [4, 250, false],
        [5, 0, true],
      ],
    );
    assert.ok(wide.chunks.every((c) => JSON.stringify(c.rows).length <= 1 << 20));
    const resumed = await readGrpc(gw, job, 3);
    assert.deepEqual(
      resumed.chunks.map((c) => c.sequence),
      [3, 4, 5],
    );
    assert.deepEqual(
      grpcRows(resumed).map((r) => r.id),
      Array.from({ length: 500 }, (_, i) => i + 501),
    );
    assert.equal(resumed.chunks.at(-1)?.metadata.rows, '1000');
  },
);

test('SQL injection attempts in filters and columns are harmless', async (t) => {
  const { gw, pg, alice, urn } = await world(t);
  const attempts = [
    { columns: ['id; DROP TABLE items; --'] },
    { columns: ['id", (SELECT current_user) AS "x'] },
    { filters: { "region = 'north' OR 1=1 --": 'x' } },
    { filters: { 'id") OR ("1"="1': 1 } },
  ];
  for (const attempt of attempts) {
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token: alice,
      json: { dataset_urn: urn, ...attempt },
    });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.detail.reason, 'unknown_column');
  }
  // Values are quoted literals (COPY takes no bind parameters): quotes, backslashes, E'' and NUL stay data.
  const values = [
    "north' OR '1'='1",
    "north'; DROP TABLE items; --",
    ["x') OR ('1'='1", 'south'],
    "north\\' OR 1=1 --",
    "E'north' OR TRUE --",
    "\\'); DROP TABLE items; --",
    "north\u0000' OR '1'='1",
    ['\u0000', "south\u0000'); DROP TABLE items; --", 'south'],
  ];
  for (const value of values) {
    const job = await createJob(gw, alice, { dataset_urn: urn, filters: { region: value }, columns: ['region'] });
    const regions = new Set(job.inline.data.map((r: { region: string }) => r.region));
    assert.ok(
      regions.size <= 1 && (regions.size === 0 || regions.has('south')),
      `${JSON.stringify(value)} matched only literally`,
    );
  }
  assert.equal(await pg.psql('SELECT count(*) FROM items'), '5000');
});

test('credential_override bad credentials fail without leaking them', async (t) => {
  const { gw, alice, urn } = await world(t);
  const res = await gw.request('POST', '/api/retrieval/jobs', {
    token: alice,
    json: {
      dataset_urn: urn,
      credential_override: JSON.stringify({ user: 'meshgate', password: 'wrong-password-123' }),
    },
  });
  assert.equal(res.status, 403);
  assert.equal(res.json.detail.reason, 'source_auth_failed');
  assert.doesNotMatch(res.text, /wrong-password-123/);
  assert.ok(!gw.logs.join('').includes('wrong-password-123'), 'the override never reaches a log line');
});

test('cancel mid-stream ends the SSE stream and closes the source connection', async (t) => {
  const { gw, pg, alice, bigUrn } = await world(t);
  const job = await createJob(gw, alice, { dataset_urn: bigUrn, transport: 'sse', batch_size: 100 });
  const reading = readSse(gw, job.job_id, alice);
  await eventually(async () => (await backends(pg, job.job_id)) === 1, 'the source connection');
  const canceled = await gw.request('POST', `/api/retrieval/jobs/${job.job_id}/cancel`, { token: alice });
  assert.equal(canceled.json.status, 'CANCELED');
  const sse = await reading;
  assert.deepEqual(sse.events.at(-1), {
    event: 'error',
    data: { event: 'error', reason: 'retrieval_job_canceled', message: 'retrieval_job_canceled' },
  });
  assert.ok(sseRows(sse).length < 300000);
  await eventually(async () => (await backends(pg, job.job_id)) === 0, 'the source connection to close');
  assert.equal(
    (await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: alice })).json.status,
    'CANCELED',
  );
});

test('a client that disconnects mid-stream stops the server reading the source', async (t) => {
  const { gw, pg, alice, bigUrn } = await world(t);
  const job = await createJob(gw, alice, { dataset_urn: bigUrn, transport: 'sse', batch_size: 100 });
  const sse = await readSse(gw, job.job_id, alice, 2);
  assert.ok(sseRows(sse).length >= 200);
  await eventually(async () => (await backends(pg, job.job_id)) === 0, 'the source connection to close');
  let status = { status: '', progress: { rows_processed: 0 }, error: '' };
  await eventually(async () => {
    status = (await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: alice })).json;
    return status.status === 'FAILED';
  }, 'the job to record the disconnect');
  assert.equal(status.error, 'client_disconnected');
  assert.ok(
    status.progress.rows_processed < 300000,
    `read ${status.progress.rows_processed} rows, not the whole table`,
  );
});

test(
  'cancel stops a statement that sends nothing yet (a selective filter ' + 'over a slow view), not only the socket',
  async (t) => {
    const { gw, pg, alice, slowUrn } = await world(t);
    // No row matches: the backend computes for minutes without writing, so a closed socket alone goes unnoticed.
    const job = await createJob(gw, alice, { dataset_urn: slowUrn, transport: 'sse', filters: { id: -1 } });
    const reading = readSse(gw, job.job_id, alice);
    // Counts the leader and any parallel workers running the job's COPY.
    const active = async () =>
      Number(
        await pg.psql(
          `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND ` +
            `query LIKE 'COPY (SELECT "id" FROM "public"."slow"%'`,
        ),
      );
    await eventually(async () => (await active()) > 0, 'the COPY to run');
    assert.equal(
      (await gw.request('POST', `/api/retrieval/jobs/${job.job_id}/cancel`, { token: alice })).json.status,
      'CANCELED',
    );
    await reading;
    await eventually(async () => (await active()) === 0, 'the statement to be canceled on the server');
  },
);
