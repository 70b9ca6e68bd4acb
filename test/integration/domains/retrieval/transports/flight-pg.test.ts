/**
 * Arrow Flight from a real PostgreSQL with pyarrow.flight: an ungated read
 * goes from COPY text straight into typed Arrow columns, a gated one through
 * row objects and the gate; both give the same Arrow schema and the same
 * values for every mapped type (integers, floats, numeric as text, booleans,
 * text with COPY escapes, bytes, dates, timestamps with and without zone,
 * json, arrays and uuid), NULLs included. Batches follow batch_size.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flightGet, startFlightClient } from '../../../../helpers/flight.ts';
import { startTestGateway } from '../../../../helpers/gateway.ts';
import { startPostgres } from '../../../../helpers/peers/postgres.ts';
import { createDataset, createJob, grantViewer } from '../../../../helpers/retrieval.ts';

const SCHEMA = [
  ['id', 'int32'],
  ['classification', 'string'],
  ['i2', 'int16'],
  ['i8', 'int64'],
  ['f4', 'float'],
  ['f8', 'double'],
  ['num', 'string'],
  ['b', 'bool'],
  ['note', 'string'],
  ['raw', 'binary'],
  ['day', 'date32[day]'],
  ['at', 'timestamp[us, tz=UTC]'],
  ['wall', 'timestamp[us]'],
  ['doc', 'string'],
  ['arr', 'string'],
  ['u', 'string'],
];

const ROW1 = {
  id: 1,
  classification: 'U',
  i2: -7,
  i8: '9007199254740993',
  f4: 1.5,
  f8: -0.25,
  num: '12345678901234567890.5',
  b: true,
  note: 'tab\there\nline "quoted" back\\slash ü',
  raw: '00ff0a',
  day: '2024-02-29',
  at: '2024-01-02T03:04:05.123456+00:00',
  wall: '1999-12-31T23:59:59',
  doc: '{"a":[1,2]}',
  arr: '[1,null,3]',
  u: '7d444840-9dc0-11d1-b245-5ffdce74fad2',
};

test('Postgres over Flight: typed columns, identical through the COPY→Arrow path and the gated row path', async (t) => {
  const pg = await startPostgres(t);
  await pg.psql(
    `
    CREATE TABLE typed (id int, classification text, i2 smallint, i8 ` +
      `bigint, f4 real, f8 double precision, num numeric, b boolean,
      note text, raw bytea, day date, at timestamptz, wall timestamp, doc json, arr int[], u uuid);
    INSERT INTO typed VALUES (1, 'U', -7, 9007199254740993, 1.5, -0.25, 12345678901234567890.5, true,
      E'tab\\there\\nline "quoted" back\\\\slash ü', '\\x00ff0a', ` +
      `'2024-02-29', '2024-01-02 05:04:05.123456+02', '1999-12-31 23:59:59',
      '{"a":[1,2]}', '{1,NULL,3}', '7d444840-9dc0-11d1-b245-5ffdce74fad2');
    INSERT INTO typed (id, classification) VALUES (2, 'U');
    INSERT INTO typed (id, classification, i8, note) SELECT i, 'U', -i, 'n' || i FROM generate_series(3, 2500) i;
    CREATE VIEW typed_gated AS SELECT * FROM typed;`,
  );
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = await gw.request('POST', '/api/catalog/secrets/', {
    token: admin,
    json: { name: 'pg', value: JSON.stringify({ user: pg.user, password: pg.password }) },
  });
  const properties = { host: pg.host, port: pg.port, database: pg.database, secret_urn: secret.json };
  const plain = await createDataset(gw, admin, { name: 'typed', platform: 'postgres', properties });
  const gated = await createDataset(gw, admin, {
    name: 'typed_gated',
    platform: 'postgres',
    properties: {
      ...properties,
      gate: { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } },
    },
  });
  const reader = await gw.userToken('reader', { attributes: { clearance: 'U' } });
  for (const urn of [plain, gated]) grantViewer(gw, urn, reader.id);
  const flight = await startFlightClient(t, gw.gateway.caPem);
  const results = [];
  for (const urn of [plain, gated]) {
    const got = await flight.get(
      flightGet(await createJob(gw, reader.token, { dataset_urn: urn, transport: 'grpc', batch_size: 1000 })),
    );
    assert.equal(got.error, undefined, JSON.stringify(got.error));
    assert.deepEqual(got.schema, SCHEMA, urn);
    assert.equal(got.rows, 2500);
    assert.equal(got.batches, 3);
    results.push(got);
  }
  const [fast, rows] = results as [any, any];
  // pyarrow gives int64 past 2^53 exactly; JSON carries it as digits only when it is a string: compare as text.
  const normal = (row: any) => ({ ...row, i8: row.i8 === null ? null : String(row.i8) });
  assert.deepEqual(normal(fast.data[0]), ROW1);
  assert.deepEqual(normal(fast.data[1]), {
    ...Object.fromEntries(SCHEMA.map(([k]) => [k, null])),
    id: 2,
    classification: 'U',
  });
  assert.deepEqual(fast.data[2499], {
    ...Object.fromEntries(SCHEMA.map(([k]) => [k, null])),
    id: 2500,
    classification: 'U',
    i8: -2500,
    note: 'n2500',
  });
  // The row path keeps every digit of an int8 past 2^53 and of a long numeric too (exact-json.ts).
  assert.deepEqual(rows.data, fast.data);
});
