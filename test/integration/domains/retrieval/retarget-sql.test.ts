/**
 * A read narrows a SQL dataset, never re-targets it (real PostgreSQL and
 * HiveServer2): a viewer's `options` naming another table, schema, query,
 * database or host is refused 422 `option_not_allowed` on every transport,
 * however the key is spelled; a credential_override carries a user and
 * password only, and the stored password never goes with a user the caller
 * chose. An attacker's listener on loopback is never contacted.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';
import { startHive } from '../../../helpers/peers/hive.ts';
import { startPostgres } from '../../../helpers/peers/postgres.ts';
import { createDataset, createJob, grantViewer } from '../../../helpers/retrieval.ts';
import { assertNotAllowed, recordingListener } from '../../../helpers/retrieval-sources.ts';

test('postgres: options never reach another table or server; an override is a user and password only', async (t) => {
  const pg = await startPostgres(t);
  await pg.psql(`
    CREATE TABLE orders (id int, item text);
    INSERT INTO orders VALUES (1, 'pen'), (2, 'ink');
    CREATE TABLE salaries (name text, pay int);
    INSERT INTO salaries VALUES ('ceo', 1000000);
    CREATE ROLE other LOGIN PASSWORD '${pg.password}';
    GRANT SELECT ON orders TO other;`);
  const attacker = await recordingListener(t);
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const secret = (
    await gw.request('POST', '/api/catalog/secrets/', {
      token: admin,
      json: { name: 'pg', value: JSON.stringify({ user: pg.user, password: pg.password }) },
    })
  ).json;
  const properties = { host: pg.host, port: pg.port, database: pg.database, secret_urn: secret };
  const urn = await createDataset(gw, admin, { name: 'orders', platform: 'postgres', properties });
  // The owner's properties are trusted: a dataset may name its table there.
  const pinned = await createDataset(gw, admin, {
    name: 'pay',
    platform: 'postgres',
    properties: { ...properties, table: 'salaries' },
  });
  const viewer = await gw.userToken('viewer');
  grantViewer(gw, urn, viewer.id);
  const token = viewer.token;

  assert.deepEqual(
    (await createJob(gw, token, { dataset_urn: urn, columns: ['item'], filters: { id: 2 } })).inline.data,
    [{ item: 'ink' }],
  );
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: pinned })).inline.data, [{ name: 'ceo', pay: 1000000 }]);
  for (const transport of ['inline', 'sse', 'grpc', 'auto']) {
    await assertNotAllowed(
      gw,
      token,
      { dataset_urn: urn, transport, options: { table: 'salaries' } },
      'table',
      'postgres',
    );
  }
  const location = [
    { Table: 'salaries' },
    { TABLE: 'salaries' },
    { schema: 'pg_catalog' },
    { query: 'SELECT * FROM salaries' },
    { database: 'postgres' },
    { dbname: 'postgres' },
    { host: attacker.host, port: attacker.port },
    { connection: { host: attacker.host, port: attacker.port } },
    { url: `postgresql://${attacker.host}:${attacker.port}/x` },
    { sslmode: 'disable' },
  ];
  for (const options of location) {
    await assertNotAllowed(gw, token, { dataset_urn: urn, options }, Object.keys(options)[0] as string, 'postgres');
  }
  const override = (extra: Record<string, unknown>) =>
    JSON.stringify({ user: pg.user, password: pg.password, ...extra });
  await assertNotAllowed(
    gw,
    token,
    { dataset_urn: urn, credential_override: override({ host: attacker.host }) },
    'host',
    'postgres',
  );
  await assertNotAllowed(
    gw,
    token,
    { dataset_urn: urn, credential_override: override({ table: 'salaries' }) },
    'table',
    'postgres',
  );
  assert.equal(attacker.connections(), 0, 'no connection reached the listener a caller named');

  // `other` shares the stored password: were it sent with the caller's user, this read would succeed.
  const asOther = await gw.request('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: urn, credential_override: '{"user":"other"}' },
  });
  assert.equal(asOther.status, 502, asOther.text);
  assert.equal(asOther.json.detail.reason, 'source_unavailable');
  const own = JSON.stringify({ user: 'other', password: pg.password });
  assert.equal(
    (await createJob(gw, token, { dataset_urn: urn, credential_override: own })).inline.data.length,
    2,
    'a complete override works',
  );
  assert.ok(!gw.logs.join('').includes(pg.password), 'no password in a log line');
});

test('hive: options never reach another table or server; an override is a user and password only', async (t) => {
  const peer = await startHive(t);
  const attacker = await recordingListener(t);
  for (const [name, line] of [
    ['orders', '1,pen'],
    ['salaries', 'ceo,1000000'],
  ] as const) {
    const dir = join(peer.dataDir, `retarget_${name}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'data.csv'), `${line}\n`);
    const columns = name === 'orders' ? 'id STRING, item STRING' : 'name STRING, pay STRING';
    await peer.query(
      `CREATE EXTERNAL TABLE ${name} (${columns}) ROW FORMAT DELIMITED FIELDS TERMINATED BY ',' STORED AS TEXTFILE ` +
        `LOCATION 'file://${dir}'`,
    );
  }
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, admin, {
    name: 'default.orders',
    platform: 'hive',
    properties: { host: peer.host, port: peer.port },
  });
  const viewer = await gw.userToken('viewer');
  grantViewer(gw, urn, viewer.id);
  const token = viewer.token;

  assert.deepEqual((await createJob(gw, token, { dataset_urn: urn })).inline.data, [{ id: '1', item: 'pen' }]);
  const location = [
    { table: 'default.salaries' },
    { Table: 'salaries' },
    { database: 'sys' },
    { query: 'SELECT * FROM salaries' },
    { host: attacker.host, port: attacker.port },
    { auth: 'PLAIN' },
    { location: '/etc' },
  ];
  for (const transport of ['inline', 'sse', 'grpc']) {
    for (const options of location) {
      await assertNotAllowed(
        gw,
        token,
        { dataset_urn: urn, transport, options },
        Object.keys(options)[0] as string,
        'hive',
      );
    }
  }
  const override = JSON.stringify({ user: 'u', password: 'p', host: attacker.host, port: attacker.port });
  await assertNotAllowed(gw, token, { dataset_urn: urn, credential_override: override }, 'host', 'hive');
  assert.equal(attacker.connections(), 0, 'no connection reached the listener a caller named');
});
