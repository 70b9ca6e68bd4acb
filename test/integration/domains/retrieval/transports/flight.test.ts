/**
 * Arrow Flight retrieval with Apache Arrow's own client (pyarrow.flight):
 * DoGet with the SDK's ticket over TLS verified against the gateway's CA.
 * The rows every other transport gives, typed by the source; the clearance
 * gate's 3/4/5 rows with the audit in app_metadata; the job COMPLETED after
 * the last batch; and the attacker's side: malformed tickets, reused,
 * foreign, tampered and expired tokens, each with the Flight status a Flight
 * client maps to its error class.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { flightGet, startFlightClient } from '../../../../helpers/flight.ts';
import { startTestGateway } from '../../../../helpers/gateway.ts';
import { createDataset, createJob, grantViewer, readSse, sseRows } from '../../../../helpers/retrieval.ts';
import { CLEARANCE_ROWS, FORMATS, sampleRows, writeAllFormats } from '../../../../helpers/retrieval-fixtures.ts';

async function world(t: { after(fn: () => unknown): void }, now?: () => Date) {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-flight-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const rows = sampleRows();
  const sample = writeAllFormats(root, 'sample', rows);
  const clearance = writeAllFormats(root, 'clearance', CLEARANCE_ROWS);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } }, now ? { now } : {});
  const admin = await gw.adminToken();
  const urns = {} as Record<(typeof FORMATS)[number], string>;
  for (const format of FORMATS)
    urns[format] = await createDataset(gw, admin, {
      name: `sample-${format}`,
      platform: 'file',
      properties: { path: sample[format] },
    });
  const gated = await createDataset(gw, admin, {
    name: 'clearance',
    platform: 'file',
    properties: { path: clearance.jsonl },
  });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  assert.equal(
    (await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(gated)}/gate`, { token: admin, json: gate }))
      .status,
    200,
  );
  const flight = await startFlightClient(t, gw.gateway.caPem);
  return { gw, admin, urns, gated, rows, flight };
}

test(
  'a grpc job advertises Arrow Flight; pyarrow reads every file format: ' +
    'the rows SSE gives, then the job is COMPLETED',
  async (t) => {
    const { gw, admin, urns, rows, flight } = await world(t);
    for (const format of FORMATS) {
      const job = await createJob(gw, admin, { dataset_urn: urns[format], transport: 'grpc', batch_size: 1000 });
      assert.equal(job.grpc.protocol, 'arrow-flight');
      assert.equal(job.grpc.service, 'arrow.flight.protocol.FlightService');
      assert.match(job.grpc.endpoints[0].location, /^grpc\+tls:\/\/localhost:\d+$/);
      assert.ok(Date.parse(job.grpc.expires_at) > Date.now());
      const got = await flight.get(flightGet(job));
      assert.equal(got.error, undefined, JSON.stringify(got.error));
      assert.deepEqual(got.data, rows, format);
      assert.equal(got.batches, 3, format);
      assert.deepEqual(got.schema, [
        ['id', 'string'],
        ['region', 'string'],
        ['amount', 'string'],
        ['note', 'string'],
      ]);
      assert.deepEqual(got.metadata?.at(-1), { filtered: false, rows: rows.length, chunks: 3 }, format);
      const status = await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: admin });
      assert.equal(status.json.status, 'COMPLETED', format);
      assert.equal(status.json.progress.rows_processed, rows.length);
    }
    const sse = await readSse(
      gw,
      (await createJob(gw, admin, { dataset_urn: urns.csv, transport: 'sse' })).job_id,
      admin,
    );
    assert.deepEqual(sseRows(sse), rows);
  },
);

test('clearance U/S/TS read 3/4/5 rows over Flight; each batch and the footer carry the gate audit', async (t) => {
  const { gw, gated, flight } = await world(t);
  for (const [clearance, count, filtered] of [
    ['U', 3, true],
    ['S', 4, true],
    ['TS', 5, false],
  ] as const) {
    const user = await gw.userToken(`reader-${clearance}`, { attributes: { clearance } });
    grantViewer(gw, gated, user.id);
    const job = await createJob(gw, user.token, { dataset_urn: gated, transport: 'grpc' });
    const got = await flight.get(flightGet(job));
    assert.equal(got.error, undefined, JSON.stringify(got.error));
    assert.deepEqual(got.data, CLEARANCE_ROWS.slice(0, count), clearance);
    const audit = { filtered, included: null, redacted: null, total: null, gate: null };
    for (const metadata of got.metadata ?? []) assert.deepEqual(metadata.gate_audit, audit, clearance);
    assert.equal(got.metadata?.at(-1).rows, count);
  }
});

test('bad tickets and tokens get the Flight status a Flight client expects, and no rows', async (t) => {
  const { gw, admin, urns, flight } = await world(t);
  const job = await createJob(gw, admin, { dataset_urn: urns.csv, transport: 'grpc' });
  const location = job.grpc.endpoints[0].location;
  const refused = async (ticket: string | { job_id: string; token: string }) => {
    const got = await flight.get({ location, ticket, detail: true });
    assert.equal(got.rows, undefined, JSON.stringify(got));
    assert.doesNotMatch(JSON.stringify(got), new RegExp(job.grpc.token.split('.')[1]));
    return `${got.error?.type}: ${got.error?.message.split('.')[0]}`;
  };
  assert.match(await refused('not json'), /^ArrowInvalid: .*flight_ticket_invalid/);
  assert.match(await refused('{"job_id": 5}'), /^ArrowInvalid: .*flight_ticket_invalid/);
  assert.match(
    await refused({ job_id: job.job_id, token: `${job.grpc.token}x` }),
    /^FlightUnauthenticatedError: .*grpc_token_invalid: signature/,
  );
  assert.match(
    await refused({ job_id: '00000000-0000-4000-8000-000000000000', token: job.grpc.token }),
    /^FlightUnauthenticatedError: .*other_job/,
  );
  // A platform.retrieval.v1 token is not a Flight token (it may be re-used; a Flight token may not).
  const v1 = await createJob(gw, admin, {
    dataset_urn: urns.csv,
    transport: 'grpc',
    grpc_protocol: 'platform.retrieval.v1',
  });
  assert.equal(v1.grpc.protocol, 'platform.retrieval.v1');
  assert.match(
    await refused({ job_id: v1.job_id, token: v1.grpc.token }),
    /^FlightUnauthenticatedError: .*other_protocol/,
  );
  // Single use: the first DoGet claims the token, a replay is refused.
  assert.equal((await flight.get(flightGet(job))).error, undefined);
  assert.match(
    await refused({ job_id: job.job_id, token: job.grpc.token }),
    /^FlightUnauthenticatedError: .*already_used/,
  );
  // Another user's token for a job they own does not open this job.
  const mallory = await gw.userToken('mallory');
  assert.equal((await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: mallory.token })).status, 404);
  const unknown = await gw.request('POST', '/api/retrieval/jobs', {
    token: admin,
    json: { dataset_urn: urns.csv, transport: 'grpc', grpc_protocol: 'flight' },
  });
  assert.equal(unknown.status, 422, unknown.text);
});

test(
  'an expired handshake is FlightUnauthenticatedError; the job status ' + 'hands out a fresh single-use token',
  async (t) => {
    let now = new Date();
    const { gw, admin, urns, rows, flight } = await world(t, () => now);
    const job = await createJob(gw, admin, { dataset_urn: urns.jsonl, transport: 'grpc' });
    now = new Date(now.getTime() + 301_000);
    const expired = await flight.get(flightGet(job));
    assert.equal(expired.error?.type, 'FlightUnauthenticatedError', JSON.stringify(expired));
    assert.match(expired.error.message, /grpc_token_invalid: expired/);
    const fresh = (await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: admin })).json;
    assert.equal(fresh.grpc.protocol, 'arrow-flight');
    const got = await flight.get(flightGet({ job_id: job.job_id, grpc: fresh.grpc }));
    assert.equal(got.error, undefined, JSON.stringify(got.error));
    assert.equal(got.rows, rows.length);
  },
);
