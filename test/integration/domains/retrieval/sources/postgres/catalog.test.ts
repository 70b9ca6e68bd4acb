/**
 * The Postgres source's schema lookup and privileges (docs/retrieval.md,
 * Postgres), on a real cluster: columns come from pg_catalog (materialized
 * views and partitioned tables read; the types information_schema reports),
 * inside the read's own transaction after the relation is locked (an ALTER
 * waiting to commit cannot change the types under the COPY), and a role
 * without SELECT is refused with 403 `source_access_denied`, naming no one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { postgresSources } from '../../../../../../domains/retrieval/sources/postgres/source.ts';
import type { SchemaField, Source } from '../../../../../../domains/retrieval/sources/types.ts';
import { startTestGateway } from '../../../../../helpers/gateway.ts';
import { type PostgresPeer, startPostgres } from '../../../../../helpers/peers/postgres.ts';
import { createDataset, createJob, eventually, readSse, sseRows } from '../../../../../helpers/retrieval.ts';

const TABLES =
  `
  CREATE TYPE mood AS ENUM ('sad', 'happy');
  CREATE DOMAIN posint AS int CHECK (VALUE > 0);
  CREATE DOMAIN ints AS int[];
  CREATE DOMAIN moody AS mood;
  CREATE TABLE typed (i int, vc varchar(20), num numeric(10, 2), ts ` +
  `timestamp(3), tz timestamptz, arr int[], m mood, d posint,
    da ints, dm moody, bits bit varying(8), iv interval, ip inet, j jsonb, dropped text, u uuid);
  ALTER TABLE typed DROP COLUMN dropped;
  CREATE MATERIALIZED VIEW scores AS SELECT i AS id, 'r' || i AS ` +
  `label, i * 1.5 AS score FROM generate_series(1, 2500) i;
  CREATE TABLE parts (id int, region text) PARTITION BY LIST (region);
  CREATE TABLE parts_north PARTITION OF parts FOR VALUES IN ('north');
  CREATE TABLE parts_south PARTITION OF parts FOR VALUES IN ('south');
  INSERT INTO parts SELECT i, (ARRAY['north', 'south'])[i % 2 + 1] FROM generate_series(1, 10) i;
  CREATE TABLE shifting (id int, n int);
  INSERT INTO shifting VALUES (1, 10), (2, 20), (3, 30);`;

async function world(t: { after(fn: () => unknown): void }) {
  const pg = await startPostgres(t);
  await pg.psql(TABLES);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const dataset = (table: string, login = { user: pg.user, password: pg.password }) =>
    createDataset(gw, admin, {
      name: `${table}-${login.user}`,
      platform: 'postgres',
      properties: { host: pg.host, port: pg.port, database: pg.database, table, ...login },
    });
  return { gw, pg, admin, dataset };
}

/** The table's schema as the source discovers it for the catalog. */
function discover(
  peer: PostgresPeer,
  table: string,
  login = { user: peer.user, password: peer.password },
): Promise<SchemaField[]> {
  const properties = { host: peer.host, port: peer.port, database: peer.database, table, ...login };
  const urn = `urn:li:dataset:(urn:li:dataPlatform:postgres,${table},PROD)`;
  const input = {
    urn,
    platform: 'postgres',
    name: table,
    properties,
    options: {},
    credentialOverride: null,
    formatHint: null,
    tag: 'meshgate-retrieval:schema',
  };
  return (postgresSources(() => undefined).create(input) as Source).schema(new AbortController().signal);
}

test(
  "schema discovery reports information_schema's types from pg_catalog, " +
    'and reads materialized views and partitioned tables',
  async (t) => {
    const { gw, pg: peer, admin, dataset } = await world(t);
    const oracle = await peer.psql(
      "SELECT column_name || ':' || data_type FROM " +
        "information_schema.columns WHERE table_name = 'typed' ORDER BY " +
        'ordinal_position',
    );
    const typed = await discover(peer, 'typed');
    assert.deepEqual(
      typed.map((f) => `${f.name}:${f.type}`),
      oracle.split('\n'),
    );
    assert.ok(oracle.includes('da:ARRAY') && oracle.includes('m:USER-DEFINED') && oracle.includes('d:integer'), oracle);

    // information_schema.columns leaves materialized views out; they are datasets like any relation.
    assert.deepEqual(await discover(peer, 'scores'), [
      { name: 'id', type: 'integer' },
      { name: 'label', type: 'text' },
      { name: 'score', type: 'numeric' },
    ]);
    const scores = Array.from({ length: 2500 }, (_, i) => ({ id: i + 1, label: `r${i + 1}`, score: (i + 1) * 1.5 }));
    const mv = await dataset('scores');
    assert.deepEqual(
      (await createJob(gw, admin, { dataset_urn: mv, filters: { id: [2, 3] } })).inline.data,
      scores.slice(1, 3),
    );
    const sse = await readSse(
      gw,
      (await createJob(gw, admin, { dataset_urn: mv, transport: 'sse', batch_size: 1000 })).job_id,
      admin,
    );
    assert.deepEqual(sseRows(sse), scores);
    assert.equal(sse.events.filter((e) => e.event === 'chunk').length, 3);

    const parts = await dataset('parts');
    const south = await createJob(gw, admin, { dataset_urn: parts, filters: { region: 'south' }, columns: ['id'] });
    assert.deepEqual(
      south.inline.data.map((r: { id: number }) => r.id).sort((a: number, b: number) => a - b),
      [1, 3, 5, 7, 9],
    );
  },
);

test(
  'a role without SELECT is refused with 403 source_access_denied (job ' +
    'creation and stream), naming neither user nor password',
  async (t) => {
    const { gw, pg: peer, admin, dataset } = await world(t);
    const login = { user: 'reader_no_select', password: 'Reader-Secret-4711' };
    await peer.psql(
      `CREATE ROLE ${login.user} LOGIN PASSWORD '${login.password}'; GRANT SELECT (id) ON shifting TO ${login.user};`,
    );
    const leaks = (text: string) => text.includes(login.user) || text.includes(login.password);

    const urns = {
      scores: await dataset('scores', login),
      parts: await dataset('parts', login),
      typed: await dataset('typed', login),
    };
    for (const [table, urn] of Object.entries(urns)) {
      const res = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: urn } });
      assert.equal(res.status, 403, `${table}: ${res.text}`);
      assert.equal(res.json.detail.reason, 'source_access_denied');
      assert.equal(
        res.json.detail.problem,
        "the dataset's credentials may not read this table",
        'in `problem`, as its sibling reasons',
      );
      assert.ok(!leaks(res.text), res.text);
    }
    // An SSE job reads when streamed: the stream ends with the same reason, and the job records it.
    const job = await createJob(gw, admin, { dataset_urn: urns.scores, transport: 'sse' });
    const sse = await readSse(gw, job.job_id, admin);
    assert.deepEqual(sse.events.at(-1)?.data, {
      event: 'error',
      reason: 'source_access_denied',
      message: "source_access_denied: the dataset's credentials may not read this table",
    });
    assert.equal(
      (await gw.request('GET', `/api/retrieval/jobs/${job.job_id}`, { token: admin })).json.error,
      'source_access_denied',
    );
    // Schema discovery is refused alike.
    await assert.rejects(discover(peer, 'scores', login), (error: { reason?: string; message: string }) => {
      return error.reason === 'source_access_denied' && !leaks(error.message);
    });

    // A role with SELECT on some columns reads those; asking for all of them is refused, not silently narrowed.
    const shifting = await dataset('shifting', login);
    assert.deepEqual((await createJob(gw, admin, { dataset_urn: shifting, columns: ['id'] })).inline.data, [
      { id: 1 },
      { id: 2 },
      { id: 3 },
    ]);
    const all = await gw.request('POST', '/api/retrieval/jobs', { token: admin, json: { dataset_urn: shifting } });
    assert.equal(all.status, 403, all.text);
    assert.ok(!leaks(gw.logs.join('')), 'no log line names the role or its password');
  },
);

test(
  'the columns are read after the relation is locked, so an ALTER COLUMN ' +
    'TYPE committing meanwhile cannot mis-render values',
  async (t) => {
    const { gw, pg: peer, admin, dataset } = await world(t);
    const urn = await dataset('shifting');
    const alter = new pg.Client({ connectionString: peer.url });
    alter.on('error', () => {}); // the peer stops first in t.after
    await alter.connect();
    await alter.query("BEGIN; ALTER TABLE shifting ALTER COLUMN n TYPE text USING 'x' || n");
    const reading = createJob(gw, admin, { dataset_urn: urn });
    const waiting = () =>
      peer.psql(
        'SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE ' +
          "'meshgate-retrieval:%' AND wait_event_type = 'Lock'",
      );
    await eventually(async () => (await waiting()) === '1', 'the read to wait for the ALTER');
    await alter.query('COMMIT');
    await alter.end();
    // The number column became text: rendered as strings, as row_to_json does now.
    assert.deepEqual((await reading).inline.data, [
      { id: 1, n: 'x10' },
      { id: 2, n: 'x20' },
      { id: 3, n: 'x30' },
    ]);
  },
);
