/**
 * Parallel reads the Flight way, with pyarrow.flight: GetFlightInfo with a
 * command descriptor holding the job's ticket JSON answers one endpoint per
 * slice of a PostgreSQL table (heap page ranges, as many as the table's size
 * and the settings allow), each with its own single-use ticket; reading
 * every endpoint at once gives each row exactly once, gated or not, and the
 * job ends COMPLETED with every row counted. The descriptor's token is spent
 * by the split, an endpoint's ticket by its read, and a ticket's slice cannot
 * be changed; a read with a limit, or of a view, is one endpoint; the SDK's
 * single-ticket DoGet still reads the whole table. The executable with two
 * workers serves the split and its endpoints whichever worker each lands on.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { flightGet, startFlightClient } from '../../../../helpers/flight.ts';
import { startTestGateway } from '../../../../helpers/gateway.ts';
import { startPostgres } from '../../../../helpers/peers/postgres.ts';
import { createDataset, createJob, grantViewer } from '../../../../helpers/retrieval.ts';
import { adminToken, connection, workersScratch } from '../../../../helpers/workers.ts';

const ROWS = 20_000;

async function world(t: { after(fn: () => unknown): void }) {
  const pg = await startPostgres(t);
  await pg.psql(`
    CREATE TABLE wide (id int, classification text, note text);
    INSERT INTO wide SELECT i, CASE WHEN i % 10 = 0 THEN 'S' ELSE 'U' END, repeat('x', 80) || i
      FROM generate_series(1, ${ROWS}) i;
    CREATE VIEW wide_view AS SELECT * FROM wide;`);
  // Small slices, so a test-sized table splits into the most endpoints allowed.
  const gw = await startTestGateway(t, { retrieval: { flightEndpointsMax: 4, flightEndpointMinPages: 20 } });
  const admin = await gw.adminToken();
  const properties = { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password };
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  const urns = {
    plain: await createDataset(gw, admin, { name: 'wide', platform: 'postgres', properties }),
    gated: await createDataset(gw, admin, {
      name: 'wide',
      platform: 'postgresql',
      properties: { ...properties, gate },
    }),
    view: await createDataset(gw, admin, { name: 'wide_view', platform: 'postgres', properties }),
  };
  const reader = await gw.userToken('reader', { attributes: { clearance: 'U' } });
  for (const urn of Object.values(urns)) grantViewer(gw, urn, reader.id);
  const flight = await startFlightClient(t, gw.gateway.caPem);
  const job = (urn: string, extra: Record<string, unknown> = {}) =>
    createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc', batch_size: 1000, ...extra });
  return { gw, reader, urns, flight, job };
}

const ids = (data: Record<string, unknown>[] | undefined) => (data ?? []).map((row) => row.id as number);

test('GetFlightInfo splits a table into endpoints read at once: every row once, gated or not', async (t) => {
  const { gw, reader, urns, flight, job } = await world(t);
  const plainJob = await job(urns.plain);
  const parallel = await flight.get({ ...flightGet(plainJob), parallel: true });
  assert.equal(parallel.error, undefined, JSON.stringify(parallel.error));
  assert.equal(parallel.endpoints, 4);
  assert.deepEqual(new Set(parallel.locations?.flat()), new Set([plainJob.grpc.endpoints[0].location]));
  assert.equal(parallel.rows, ROWS);
  const got = ids(parallel.data).sort((a, b) => a - b);
  assert.deepEqual(
    got,
    Array.from({ length: ROWS }, (_, i) => i + 1),
  );
  const status = await gw.request('GET', `/api/retrieval/jobs/${plainJob.job_id}`, { token: reader.token });
  assert.equal(status.json.status, 'COMPLETED');
  assert.equal(status.json.progress.rows_processed, ROWS);

  // The gate runs on every endpoint: S rows (every tenth) are withheld from a U reader, each other row once.
  const gated = await flight.get({ ...flightGet(await job(urns.gated)), parallel: true });
  assert.equal(gated.error, undefined, JSON.stringify(gated.error));
  assert.equal(gated.endpoints, 4);
  const kept = ids(gated.data).sort((a, b) => a - b);
  assert.deepEqual(
    kept,
    Array.from({ length: ROWS }, (_, i) => i + 1).filter((id) => id % 10 !== 0),
  );
});

test('one endpoint for a limited read or a view; the single-ticket DoGet reads the whole table', async (t) => {
  const { urns, flight, job } = await world(t);
  const limited = await flight.get({ ...flightGet(await job(urns.plain, { limit_rows: 15_000 })), parallel: true });
  assert.deepEqual([limited.endpoints, limited.rows], [1, 15_000]);
  const view = await flight.get({ ...flightGet(await job(urns.view)), parallel: true });
  assert.deepEqual([view.endpoints, view.rows], [1, ROWS]);
  const single = await flight.get(flightGet(await job(urns.plain), false));
  assert.equal(single.rows, ROWS);
});

test('the split spends the job token, each endpoint ticket is single-use, and a slice cannot be changed', async (t) => {
  const { urns, flight, job } = await world(t);
  const spent = await job(urns.plain);
  const split = await flight.get({ ...flightGet(spent, false), parallel: true });
  assert.equal(split.endpoints, 4);
  const again = await flight.get(flightGet(spent, false));
  assert.match(`${again.error?.type}: ${again.error?.message}`, /^FlightUnauthenticatedError: .*already_used/);
  const secondSplit = await flight.get({ ...flightGet(spent, false), parallel: true });
  assert.match(`${secondSplit.error?.type}: ${secondSplit.error?.message}`, /already_used/);
  const [ticket] = split.tickets as [string];
  const location = spent.grpc.endpoints[0].location;
  const reused = await flight.get({ location, ticket });
  assert.match(`${reused.error?.type}: ${reused.error?.message}`, /^FlightUnauthenticatedError: .*already_used/);

  // A fresh split's first ticket, its slice widened to the whole table: the signature no longer holds.
  const fresh = await flight.get({ ...flightGet(await job(urns.plain), false), parallel: true, stop_after: 1 });
  const parsed = JSON.parse((fresh.tickets as string[])[1] as string) as { job_id: string; token: string };
  const [body, signature] = parsed.token.split('.') as [string, string];
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString());
  const widened = Buffer.from(JSON.stringify({ ...claims, r: [0, null] })).toString('base64url');
  const tampered = await flight.get({ location, ticket: { job_id: parsed.job_id, token: `${widened}.${signature}` } });
  assert.match(`${tampered.error?.type}: ${tampered.error?.message}`, /^FlightUnauthenticatedError: .*signature/);
});

test('the executable with two workers splits a read and serves every endpoint, each row once', async (t) => {
  const pg = await startPostgres(t);
  await pg.psql(`CREATE TABLE wide (id int, note text);
    INSERT INTO wide SELECT i, repeat('x', 80) || i FROM generate_series(1, ${ROWS}) i;`);
  const { dir, serve } = workersScratch(t);
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ retrieval: { flightEndpointMinPages: 20 } }));
  const served = await serve(2, { PLATFORM_CONFIG_FILE: config, PLATFORM_RETRIEVAL_FLIGHT_ENDPOINTS_MAX: '3' });
  const token = await adminToken(served);
  const conn = connection(served);
  t.after(() => conn.close());
  const properties = { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password };
  const dataset = await conn.call('POST', '/api/catalog/datasets/', {
    token,
    json: { name: 'wide', platform: 'postgres', properties },
  });
  assert.equal(dataset.status, 201, dataset.text);
  const job = await conn.call('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: dataset.json, transport: 'grpc' },
  });
  assert.equal(job.status, 201, job.text);
  const flight = await startFlightClient(t, served.ca);
  const parallel = await flight.get({ ...flightGet(job.json), parallel: true });
  assert.equal(parallel.error, undefined, JSON.stringify(parallel.error));
  assert.equal(parallel.endpoints, 3);
  assert.deepEqual(
    ids(parallel.data).sort((a, b) => a - b),
    Array.from({ length: ROWS }, (_, i) => i + 1),
  );
  const status = await conn.call('GET', `/api/retrieval/jobs/${job.json.job_id}`, { token });
  assert.deepEqual([status.json.status, status.json.progress.rows_processed], ['COMPLETED', ROWS]);
});
