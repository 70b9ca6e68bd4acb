/**
 * A co-owner who cannot use a dataset's secret cannot choose where it goes (real PostgreSQL, moto S3, the
 * local Slack API server, a recording listener on loopback): every binding records who wrote it and a use
 * is authorized against that user, so the co-owner's reads work — but a properties write that keeps the
 * reference while changing the host, port, endpoint, region, API URL or anything else is 403
 * `secret_reference_forbidden`, and the listener never hears of the credential.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { grant } from '../../../helpers/catalog.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { startPostgres } from '../../../helpers/peers/postgres.ts';
import { s3ClientFor, startS3 } from '../../../helpers/peers/s3.ts';
import { createDataset, createJob } from '../../../helpers/retrieval.ts';
import { type RecordingListener, recordingListener } from '../../../helpers/retrieval-sources.ts';
import { startSlackApi } from '../../../helpers/slack-api.ts';

interface Owners {
  gw: TestGateway;
  bob: { token: string; id: string };
  carol: { token: string; id: string };
}

/** bob owns a secret and a dataset naming it; carol co-owns the dataset but may not use bob's secret. */
async function coOwned(
  t: { after(fn: () => unknown): void },
  platform: string,
  name: string,
  value: string,
  properties: (urn: string) => Record<string, unknown>,
) {
  const gw = await startTestGateway(t);
  const bob = await gw.userToken('bob');
  const carol = await gw.userToken('carol');
  const secret = await gw.request('POST', '/api/catalog/secrets/', {
    token: bob.token,
    json: { name: 'bob-cred', value },
  });
  assert.equal(secret.status, 201, secret.text);
  const stored = properties(secret.json);
  const dataset = await createDataset(gw, bob.token, { name, platform, properties: stored });
  grant(gw, carol.id, 'owner', dataset);
  return { owners: { gw, bob, carol } satisfies Owners, dataset, secretUrn: secret.json as string, stored };
}

/** Each re-pointing write by carol, keeping bob's reference, is refused; the stored properties stay. */
async function assertRetargetRefused(
  { gw, carol }: Owners,
  dataset: string,
  secretUrn: string,
  stored: Record<string, unknown>,
  changes: Record<string, unknown>[],
) {
  const path = `/api/catalog/datasets/v2/${encodeURIComponent(dataset)}`;
  for (const change of changes) {
    const res = await gw.request('PATCH', path, { token: carol.token, json: { properties: { ...stored, ...change } } });
    assert.equal(res.status, 403, `${JSON.stringify(change)}: ${res.text}`);
    assert.deepEqual([res.json.detail.reason, res.json.detail.secret_urn], ['secret_reference_forbidden', secretUrn]);
  }
  assert.deepEqual((await gw.request('GET', path, { token: carol.token })).json.properties, stored);
  const unchanged = await gw.request('PATCH', path, {
    token: carol.token,
    json: { properties: stored, description: 'ok' },
  });
  assert.equal(unchanged.status, 200, 'a write leaving the properties as they are is fine');
}

function assertNeverHeard(listener: RecordingListener, owners: Owners, values: string[]): void {
  assert.equal(listener.connections(), 0, 'nothing connected to the re-pointed location');
  const seen = [listener.received(), ...owners.gw.logs].join('\n');
  for (const value of values) assert.ok(!seen.includes(value), 'the credential appears nowhere');
}

test(
  'postgres: a co-owner cannot re-point a dataset whose secret they ' + 'cannot use; reads stay with the binder',
  async (t) => {
    const pg = await startPostgres(t);
    const password = randomBytes(18).toString('base64url');
    await pg.psql(`
    CREATE TABLE orders (id int);
    INSERT INTO orders VALUES (1);
    CREATE ROLE bob_reader LOGIN PASSWORD '${password}';
    GRANT SELECT ON orders TO bob_reader;`);
    const listener = await recordingListener(t);
    const value = JSON.stringify({ user: 'bob_reader', password });
    const located = (urn: string) => ({
      host: pg.host,
      port: pg.port,
      database: pg.database,
      table: 'orders',
      secret_urn: urn,
    });
    const { owners, dataset, secretUrn, stored } = await coOwned(t, 'postgres', 'orders', value, located);
    const read = { dataset_urn: dataset };
    assert.deepEqual(
      (await createJob(owners.gw, owners.carol.token, read)).inline.data,
      [{ id: 1 }],
      'bob bound it: carol reads',
    );
    const changes = [
      { host: listener.host, port: listener.port },
      { port: listener.port },
      { database: 'template1' },
      { table: 'pg_authid' },
      { sslmode: 'disable' },
    ];
    await assertRetargetRefused(owners, dataset, secretUrn, stored, changes);
    assert.deepEqual((await createJob(owners.gw, owners.carol.token, read)).inline.data, [{ id: 1 }]);
    assertNeverHeard(listener, owners, [password]);
    // bob himself may move his credential.
    const own = await owners.gw.request('PATCH', `/api/catalog/datasets/v2/${encodeURIComponent(dataset)}`, {
      token: owners.bob.token,
      json: { properties: { ...stored, table: 'orders', sslmode: 'disable' } },
    });
    assert.equal(own.status, 200, own.text);
  },
);

test('s3: a co-owner cannot send the stored keys to another endpoint or region', async (t) => {
  const peer = await startS3(t);
  const client = s3ClientFor(peer, t);
  await client.send(new CreateBucketCommand({ Bucket: 'shop' }));
  await client.send(new PutObjectCommand({ Bucket: 'shop', Key: 'orders.jsonl', Body: '{"id":1}\n' }));
  const listener = await recordingListener(t);
  const keys = { aws_access_key_id: 'AKIABOBSTORED0000001', aws_secret_access_key: 'bob-secret-key' };
  const located = (urn: string) => ({ endpoint: peer.endpoint, secret_urn: urn });
  const { owners, dataset, secretUrn, stored } = await coOwned(
    t,
    's3',
    'shop/orders.jsonl',
    JSON.stringify(keys),
    located,
  );
  assert.deepEqual((await createJob(owners.gw, owners.carol.token, { dataset_urn: dataset })).inline.data, [{ id: 1 }]);
  const changes = [
    { endpoint: listener.url },
    { endpoint_url: listener.url },
    { region: 'x@attacker.example' },
    { bucket: 'other' },
  ];
  await assertRetargetRefused(owners, dataset, secretUrn, stored, changes);
  assertNeverHeard(listener, owners, Object.values(keys));
});

test('slack: a co-owner cannot send the stored token to another API URL', async (t) => {
  const token = 'xoxb-bob-stored-token-77';
  const api = await startSlackApi(t, token, [
    { id: 'C0GENERAL', name: 'general', messages: [{ type: 'message', text: 'hi', ts: '1700000000.000100' }] },
  ]);
  const listener = await recordingListener(t);
  const located = (urn: string) => ({ api_url: api.url, secret_urn: urn, channels: ['general'] });
  const { owners, dataset, secretUrn, stored } = await coOwned(t, 'slack', 'general', token, located);
  assert.equal((await createJob(owners.gw, owners.carol.token, { dataset_urn: dataset })).inline.data.length, 1);
  const changes = [{ api_url: `${listener.url}/api/` }, { channels: ['general', 'exec'] }];
  await assertRetargetRefused(owners, dataset, secretUrn, stored, changes);
  assertNeverHeard(listener, owners, [token]);
});
