/**
 * Postgres value representation (docs/retrieval.md, Postgres): row_to_json
 * renders the rows, so every transport, gated (rows parsed by the gateway)
 * or not (Postgres's JSON bytes sent as they are), returns identical rows
 * for int8, numeric, timestamptz, date, json, jsonb, bytea, text with
 * quotes, backslashes, control characters and 4-byte UTF-8, and NULLs.
 * Filter values are literals coerced to the column's type.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { startPostgres } from '../../../../../helpers/peers/postgres.ts';
import {
  createDataset,
  createJob,
  grantViewer,
  grpcClient,
  grpcRows,
  readGrpc,
  readSse,
  sseRows,
  V1,
} from '../../../../../helpers/retrieval.ts';

const NOTE = 'He said "hi" \\ back\\slash\nline two\ttab ünïcödé 😀 \u0001 end';

// One row per line; the json value keeps its own newline and tab (json stores its input text).
const TABLE = String.raw`
  CREATE TABLE typed (id int, classification text, big int8, amount numeric, at timestamptz, day date,
    doc json, docb jsonb, raw bytea, note text);
  INSERT INTO typed VALUES
    (1, 'U', 9007199254740993, 12.50, '2024-02-29 13:45:30.123456+02', '2024-02-29',
     E'{"a": [1, 2],\n\t"s": "x\\ny"}', '{"q": "\"quoted\"", "b": null}', '\x00ff0a5c',
     E'He said "hi" \\ back\\slash\nline two\ttab ünïcödé 😀 \x01 end'),
    (2, 'U', -42, -0.001, '1970-01-01 00:00:00+00', '0001-01-01', '[]', '{}', '\x',
     E'carriage\rreturn, a backslash-n \\n, a quote \''),
    (3, 'U', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);`;

const EXPECTED = [
  {
    id: 1,
    classification: 'U',
    big: 2 ** 53, // 9007199254740993 as a JSON number, once parsed by a client
    amount: 12.5,
    at: '2024-02-29T11:45:30.123456+00:00',
    day: '2024-02-29',
    doc: { a: [1, 2], s: 'x\ny' },
    docb: { b: null, q: '"quoted"' },
    raw: '\\x00ff0a5c',
    note: NOTE,
  },
  {
    id: 2,
    classification: 'U',
    big: -42,
    amount: -0.001,
    at: '1970-01-01T00:00:00+00:00',
    day: '0001-01-01',
    doc: [],
    docb: {},
    raw: '\\x',
    note: "carriage\rreturn, a backslash-n \\n, a quote '",
  },
  {
    id: 3,
    classification: 'U',
    big: null,
    amount: null,
    at: null,
    day: null,
    doc: null,
    docb: null,
    raw: null,
    note: null,
  },
];

/** A gateway with two datasets on `table`, one gated by clearance (every row is U, so nothing is withheld). */
async function world(t: { after(fn: () => unknown): void }, sql = TABLE, table = 'typed') {
  const pg = await startPostgres(t);
  await pg.psql(sql);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const properties = {
    host: pg.host,
    port: pg.port,
    database: pg.database,
    user: pg.user,
    password: pg.password,
    table,
  };
  const plain = await createDataset(gw, admin, { name: table, platform: 'postgres', properties });
  const gated = await createDataset(gw, admin, { name: `${table}-gated`, platform: 'postgres', properties });
  const gate = { type: 'platform.gates.clearance.ClearanceGate', config: { classification_field: 'classification' } };
  assert.equal(
    (await gw.request('PUT', `/api/catalog/datasets/${encodeURIComponent(gated)}/gate`, { token: admin, json: gate }))
      .status,
    200,
  );
  const alice = await gw.userToken('alice', { attributes: { clearance: 'U' } });
  for (const urn of [plain, gated]) grantViewer(gw, urn, alice.id);
  return { gw, pg, alice: alice.token, plain, gated };
}

/** The gRPC payload bytes as sent, before any client parses them. */
async function rawGrpcPayload(
  gw: Awaited<ReturnType<typeof world>>['gw'],
  job: { job_id: string; grpc: { token: string } },
): Promise<string> {
  let text = '';
  for await (const chunk of grpcClient(gw).streamData({ jobId: job.job_id, token: job.grpc.token }))
    text += Buffer.from(chunk.payload).toString('utf8');
  return text;
}

test('Postgres values are identical through inline, SSE and gRPC, gated and ungated', async (t) => {
  const { gw, alice, plain, gated } = await world(t);
  for (const urn of [plain, gated]) {
    const inline = await createJob(gw, alice, { dataset_urn: urn });
    assert.equal(inline.transport, 'inline');
    assert.deepEqual(inline.inline.data, EXPECTED, `inline ${urn}`);
    // batch_size 1: every row is its own COPY line and its own chunk.
    const sse = await readSse(
      gw,
      (await createJob(gw, alice, { dataset_urn: urn, transport: 'sse', batch_size: 1 })).job_id,
      alice,
    );
    assert.deepEqual(sseRows(sse), EXPECTED, `sse ${urn}`);
    assert.equal(sse.events.filter((e) => e.event === 'chunk').length, 3);
    assert.deepEqual(
      grpcRows(
        await readGrpc(gw, await createJob(gw, alice, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 })),
      ),
      EXPECTED,
      `grpc ${urn}`,
    );
  }
  // int8 past 2^53 and numeric's trailing zero are Postgres's text, sent as it is or kept when the gateway parsed rows.
  for (const urn of [plain, gated])
    assert.match(
      await rawGrpcPayload(gw, await createJob(gw, alice, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 })),
      /"big":9007199254740993,"amount":12.50,/,
    );
});

test(
  'Postgres filter values are literals coerced to the column type; ' + 'quotes, backslashes and NUL stay data',
  async (t) => {
    const { gw, alice, plain } = await world(t);
    const ids = async (filters: Record<string, unknown>) => {
      const job = await createJob(gw, alice, { dataset_urn: plain, filters, columns: ['id'] });
      return job.inline.data.map((r: { id: number }) => r.id);
    };
    assert.deepEqual(await ids({ note: NOTE }), [1]);
    assert.deepEqual(await ids({ note: "carriage\rreturn, a backslash-n \\n, a quote '" }), [2]);
    assert.deepEqual(await ids({ big: '-42' }), [2]);
    assert.deepEqual(await ids({ big: [-42, '9007199254740993'] }), [1, 2]);
    assert.deepEqual(await ids({ amount: '12.5', day: '2024-02-29' }), [1]);
    assert.deepEqual(await ids({ at: '2024-02-29T11:45:30.123456Z' }), [1]);
    assert.deepEqual(await ids({ big: null }), [3]);
    for (const value of [
      "x' OR 'a'='a",
      "x\\' OR 1=1 --",
      "E'\\x27 OR 1=1 --",
      "\\'; DROP TABLE typed; --",
      'back\\slash\\',
      "'\u0000' OR 'a'='a",
    ]) {
      assert.deepEqual(await ids({ note: value }), [], JSON.stringify(value));
    }
    // PostgreSQL text holds no NUL: such a value equals nothing, in any column, without an error.
    assert.deepEqual(await ids({ note: 'He said\u0000' }), []);
    assert.deepEqual(await ids({ id: '1\u0000' }), []);
    assert.deepEqual(await ids({ id: ['1\u0000', 2] }), [2]);
    assert.deepEqual(await ids({ note: ['\u0000', null] }), [3]);
    // A value its column's type cannot hold is the caller's mistake: 422, not a source failure.
    for (const filters of [{ id: 'abc' }, { day: '2024-02-30' }, { big: '99999999999999999999' }, { doc: '{"a":1}' }]) {
      const refused = await gw.request('POST', '/api/retrieval/jobs', {
        token: alice,
        json: { dataset_urn: plain, filters },
      });
      assert.equal(refused.status, 422, JSON.stringify(filters));
      assert.equal(refused.json.detail.reason, 'filter_value_invalid');
    }
  },
);

test('a view that fails while running is a source failure (502), not a bad filter', async (t) => {
  const sql =
    'CREATE TABLE t (id int); INSERT INTO t SELECT generate_series(1, 5); ' +
    'CREATE VIEW broken AS SELECT id, 1 / (id - 3) AS x FROM t;';
  const { gw, alice, plain } = await world(t, sql, 'broken');
  const failed = await gw.request('POST', '/api/retrieval/jobs', { token: alice, json: { dataset_urn: plain } });
  assert.equal(failed.status, 502, failed.text);
  assert.equal(failed.json.detail.reason, 'source_unavailable');
});

// Every type class the converter renders, and some PostgreSQL renders (to_json): arrays, enum, domain,
// interval, time, timestamp, inet, point. json values without layout whitespace, so bytes compare exactly.
const ORACLE_TABLE = String.raw`
  CREATE TYPE mood AS ENUM ('sad', 'happy');
  CREATE DOMAIN posint AS int CHECK (VALUE > 0);
  CREATE TABLE oracle (classification text, i2 smallint, i4 int, i8 bigint, f4 real, f8 double precision,
    num numeric, b boolean,
    vc varchar(20), ch char(4), u uuid, t text, nm name, arr int[], tarr text[], m mood, d posint, iv interval, tm time,
    ts timestamp, tstz timestamptz, dt date, j json, jb jsonb, bin bytea,
    ip inet, pt point, "odd ""na\me"" ü" text, oi oid);
  INSERT INTO oracle VALUES
    ('U', 1, 2, 3, 1.5, 0.1, 123.4500, true, 'vc', 'ab', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
     E'q"\\\b\f\n\r\t\x0b\x01\x1f\x7f é 😀 \\v', 'nm', '{1,2,NULL}',
     ARRAY['a"b', 'c\d', NULL], 'happy', 7, '1 day 02:03:04',
     '04:05:06.789', '2024-02-29 13:45:30', '2024-02-29 13:45:30+02', '2024-02-29', '{"k":"v\\n","n":[1,2.5e3]}',
     '{"z": "é😀", "a": [true, null]}', '\xdeadbeef', '192.168.0.1/24', '(1.5,2)', 'x', 4294967295),
    ('U', -32768, -2147483648, -9223372036854775808, 'Infinity', 'NaN', '-Infinity', false,
     '', '', NULL, '', '', '{}', '{}',
     'sad', 1, '-1 mon', '00:00', '-infinity', 'infinity', '0001-01-01 BC', 'null', '"s"', '\x', '::1', '(0,0)', '', 0),
    ('U', NULL, NULL, NULL, 'NaN', '-Infinity', 'NaN',
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);`;

test("the converted rows are row_to_json's, byte for byte, through every transport gated and ungated", async (t) => {
  const { gw, pg, alice, plain, gated } = await world(t, ORACLE_TABLE, 'oracle');
  const lines = (await pg.psql("SET TimeZone = 'UTC'; SELECT row_to_json(o) FROM oracle o")).split('\n');
  assert.equal(lines.length, 3);
  const oracle = lines.map((line) => JSON.parse(line));
  const payload = await rawGrpcPayload(
    gw,
    await createJob(gw, alice, { dataset_urn: plain, transport: 'grpc', grpc_protocol: V1 }),
  );
  assert.equal(payload, `[${lines.join(',')}]`);
  for (const urn of [plain, gated]) {
    assert.deepEqual((await createJob(gw, alice, { dataset_urn: urn })).inline.data, oracle, `inline ${urn}`);
    const sse = await readSse(
      gw,
      (await createJob(gw, alice, { dataset_urn: urn, transport: 'sse', batch_size: 2 })).job_id,
      alice,
    );
    assert.deepEqual(sseRows(sse), oracle, `sse ${urn}`);
    assert.deepEqual(
      grpcRows(
        await readGrpc(gw, await createJob(gw, alice, { dataset_urn: urn, transport: 'grpc', grpc_protocol: V1 })),
      ),
      oracle,
      `grpc ${urn}`,
    );
  }
  const columns = ['tstz', 'odd "na\\me" ü', 'arr', 'f8', 'tstz'];
  const picked = await rawGrpcPayload(
    gw,
    await createJob(gw, alice, { dataset_urn: plain, transport: 'grpc', grpc_protocol: V1, columns }),
  );
  const select = String.raw`SELECT tstz, "odd ""na\me"" ü", arr, f8 FROM oracle`;
  assert.equal(
    picked,
    `[${(await pg.psql(`SET TimeZone = 'UTC'; SELECT row_to_json(o) FROM (${select}) o`)).split('\n').join(',')}]`,
  );
});

test("a gated table without the gate's column withholds every row and names only the caller's columns", async (t) => {
  const sql = "CREATE TABLE unlabelled (id int, note text); INSERT INTO unlabelled VALUES (1, 'a'), (2, 'b');";
  const { gw, alice, plain, gated } = await world(t, sql, 'unlabelled');
  assert.deepEqual((await createJob(gw, alice, { dataset_urn: plain, columns: ['id'] })).inline.data, [
    { id: 1 },
    { id: 2 },
  ]);
  for (const columns of [undefined, ['id']]) {
    const job = await createJob(gw, alice, { dataset_urn: gated, columns });
    assert.deepEqual([job.inline.data, job.inline.metadata.gate_audit.filtered], [[], true], String(columns));
  }
  for (const [body, column] of [
    [{ columns: ['id', 'nope'] }, 'nope'],
    [{ filters: { classification: 'U' } }, 'classification'],
  ] as const) {
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token: alice,
      json: { dataset_urn: gated, ...body },
    });
    assert.deepEqual(
      [res.status, res.json.detail.reason, res.json.detail.column],
      [422, 'unknown_column', column],
      JSON.stringify(body),
    );
  }
});
