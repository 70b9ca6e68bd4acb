/**
 * Every transport returns the same rows: one table read inline, over SSE,
 * over platform.retrieval.v1 and over Arrow Flight (pyarrow) gives one
 * digest, ungated (PostgreSQL's bytes, COPY → Arrow) and gated (row
 * objects). The table holds every type the gateway maps, NULLs, integers
 * past 2^53 and numerics past 15 digits, which no transport may round; a
 * HiveServer2 DECIMAL keeps its digits too (text in JSON, decimal128 in Arrow).
 * JSON is read keeping each number's own text, so a rounding anywhere shows.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { createParser } from 'eventsource-parser';
import { request as undiciRequest } from 'undici';
import { flightGet, startFlightClient } from '../../../../helpers/flight.ts';
import { type After, startTestGateway, type TestGateway } from '../../../../helpers/gateway.ts';
import { csvTable, startHive } from '../../../../helpers/peers/hive.ts';
import { startPostgres } from '../../../../helpers/peers/postgres.ts';
import { createDataset, createJob, grantViewer, grpcClient, type Row, V1 } from '../../../../helpers/retrieval.ts';

/** JSON with every number as its own text: what the transport sent, digit for digit. */
function exact(text: string): any {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === 'number' ? (context?.source as string) : value,
  );
}

/** A JSON transport's cell: nested JSON (json, jsonb, arrays) as its canonical text, a scalar as it came. */
const jsonCell = (value: unknown) => (value !== null && typeof value === 'object' ? JSON.stringify(value) : value);

/** pyarrow's value as a JSON transport gives it, by the column's name and Arrow type. */
function arrowCell(value: unknown, name: string, type: string): unknown {
  if (value === null) return null;
  if (type === 'binary') return `\\x${value}`;
  if (typeof value === 'number') return String(value);
  if (JSON_COLUMNS.has(name)) return JSON.stringify(exact(value as string));
  return value;
}

/** Flight gives json, jsonb and arrays as their text (the schema names them `string`): their columns, by name. */
const JSON_COLUMNS = new Set(['doc', 'docb', 'arr']);

function digest(rows: readonly Row[]): string {
  const ordered = [...rows].sort((a, b) => Number(a.id) - Number(b.id));
  return createHash('sha256').update(JSON.stringify(ordered)).digest('hex');
}

async function inlineRows(gw: TestGateway, token: string, urn: string): Promise<Row[]> {
  const res = await gw.request('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: urn, transport: 'inline' },
  });
  assert.equal(res.status, 201, res.text);
  return exact(res.text).inline.data;
}

async function sseRows(gw: TestGateway, token: string, urn: string): Promise<Row[]> {
  const job = await createJob(gw, token, { dataset_urn: urn, transport: 'sse', batch_size: 2 });
  const res = await undiciRequest(`${gw.gateway.httpsUrl}/api/retrieval/jobs/${job.job_id}/stream`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    dispatcher: gw.agent,
  });
  const rows: Row[] = [];
  const events: string[] = [];
  const parser = createParser({
    onEvent: (m) => {
      events.push(m.event ?? 'message');
      if (m.event === 'chunk') rows.push(...exact(m.data).data);
    },
  });
  for await (const piece of res.body) parser.feed(Buffer.from(piece).toString('utf8'));
  assert.equal(events.at(-1), 'complete');
  return rows;
}

async function grpcRows(gw: TestGateway, token: string, urn: string): Promise<Row[]> {
  const job = await createJob(gw, token, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1, batch_size: 2 });
  const rows: Row[] = [];
  for await (const chunk of grpcClient(gw).streamData({ jobId: job.job_id, token: job.grpc.token }))
    if (!chunk.final) rows.push(...exact(Buffer.from(chunk.payload).toString('utf8')));
  return rows;
}

/** Every transport's rows, canonical; asserts they are one digest and returns them. */
async function sameEverywhere(t: After, gw: TestGateway, token: string, urn: string): Promise<Row[]> {
  const canonical = (rows: Row[]) =>
    rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, jsonCell(v)])));
  const flight = await startFlightClient(t, gw.gateway.caPem);
  const read = await flight.get(flightGet(await createJob(gw, token, { dataset_urn: urn, transport: 'grpc' })));
  assert.equal(read.error, undefined, JSON.stringify(read.error));
  const types = new Map(read.schema);
  const flightRows = (read.data ?? []).map((row) =>
    Object.fromEntries(Object.entries(row).map(([k, v]) => [k, arrowCell(v, k, types.get(k) as string)])),
  );
  const byTransport = {
    inline: canonical(await inlineRows(gw, token, urn)),
    sse: canonical(await sseRows(gw, token, urn)),
    grpc: canonical(await grpcRows(gw, token, urn)),
    flight: flightRows,
  };
  const digests = Object.fromEntries(Object.entries(byTransport).map(([name, rows]) => [name, digest(rows)]));
  for (const [name, rows] of Object.entries(byTransport))
    assert.deepEqual(rows, byTransport.inline, `${name} differs from inline (${JSON.stringify(digests)})`);
  return byTransport.inline;
}

test('PostgreSQL: inline, SSE, gRPC and Flight give one digest, ungated and gated, every digit kept', async (t) => {
  const pg = await startPostgres(t);
  await pg.psql(String.raw`
    CREATE TABLE every_type (id int, classification text, i2 smallint, i8 bigint, f4 real, f8 double precision,
      num numeric, dec numeric(38,10), b boolean, note text, v varchar(20), raw bytea, day date, at timestamptz,
      wall timestamp, doc json, docb jsonb, arr int[], u uuid);
    INSERT INTO every_type VALUES
      (1, 'U', -7, 9007199254740993, 1.5, -0.25, 12345678901234567890.5, 1234567890123456789012345678.1234567891,
       true, E'tab\there\nline "quoted" back\\slash ü 😀', 'short', '\x00ff0a', '2024-02-29',
       '2024-01-02 05:04:05.123456+02', '1999-12-31 23:59:59', '{"a":[1,2],"n":12345678901234567890123}',
       '{"q": "\"x\"", "b": null}', '{1,NULL,3}', '7d444840-9dc0-11d1-b245-5ffdce74fad2'),
      (2, 'U', 32767, -9223372036854775808, -0.5, 0.125, -0.001, -0.5, false, '', 'x', '\x', '0001-01-01',
       '1970-01-01 00:00:00+00', '2000-01-01 00:00:00.500001', '[]', '{}', '{}',
       '00000000-0000-0000-0000-000000000000'),
      (3, 'U', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CREATE VIEW every_type_gated AS SELECT * FROM every_type;`);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const properties = { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password };
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  const plain = await createDataset(gw, admin, { name: 'every_type', platform: 'postgres', properties });
  const gated = await createDataset(gw, admin, {
    name: 'every_type_gated',
    platform: 'postgres',
    properties: { ...properties, gate },
  });
  const reader = await gw.userToken('reader', { attributes: { clearance: 'U' } });
  for (const urn of [plain, gated]) grantViewer(gw, urn, reader.id);

  const ungatedRows = await sameEverywhere(t, gw, reader.token, plain);
  assert.deepEqual(await sameEverywhere(t, gw, reader.token, gated), ungatedRows);
  const [first, second, third] = ungatedRows as [Row, Row, Row];
  assert.equal(first.i8, '9007199254740993');
  assert.equal(first.num, '12345678901234567890.5');
  assert.equal(first.dec, '1234567890123456789012345678.1234567891');
  assert.equal(first.doc, '{"a":["1","2"],"n":"12345678901234567890123"}');
  assert.equal(second.i8, '-9223372036854775808');
  assert.equal(second.dec, '-0.5000000000');
  assert.equal(first.at, '2024-01-02T03:04:05.123456+00:00');
  assert.deepEqual(
    Object.entries(third).filter(([, v]) => v !== null),
    [
      ['id', '3'],
      ['classification', 'U'],
    ],
  );
});

test('Hive: a DECIMAL past 15 digits is the same on every transport, never a JavaScript number', async (t) => {
  const peer = await startHive(t);
  await csvTable(peer, 'decimals', 'id INT, amount DECIMAL(38,10), big BIGINT, name STRING, flag BOOLEAN, day DATE', [
    '1,1234567890123456789012345678.1234567891,9007199254740993,first,true,2024-02-29',
    '2,-0.5000000000,-42,second,false,1970-01-01',
    '3,\\N,\\N,\\N,\\N,\\N',
  ]);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, {
    name: 'default.decimals',
    platform: 'hive',
    properties: { host: peer.host, port: peer.port },
  });
  const rows = await sameEverywhere(t, gw, admin, urn);
  assert.deepEqual(rows[0], {
    id: '1',
    amount: '1234567890123456789012345678.1234567891',
    big: '9007199254740993',
    name: 'first',
    flag: true,
    day: '2024-02-29',
  });
  assert.equal(rows[1]?.amount, '-0.5000000000');
});
