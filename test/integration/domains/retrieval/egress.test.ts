/**
 * Where a caller's `credential_override` can make the gateway connect, from
 * the attacker's side: a viewer with a complete S3 key pair of their own
 * (a second moto, behind a proxy that counts the connections it accepts)
 * cannot point the gateway at it unless the operator lists its host
 * (`retrieval.endpointHosts.s3`); the dataset's own endpoint stays open. A
 * listed endpoint gets the caller's keys only, never the stored ones. File
 * and non-SASL Kafka datasets refuse an override instead of ignoring it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';
import { type S3Peer, s3ClientFor, startS3 } from '../../../helpers/peers/s3.ts';
import { createDataset, createJob, createSecret, grantViewer } from '../../../helpers/retrieval.ts';
import { countingProxy, recordingListener } from '../../../helpers/retrieval-sources.ts';

const STORED = {
  aws_access_key_id: 'AKIAOWNERSTORED00002',
  aws_secret_access_key: 'owner-secret-key-2',
  aws_session_token: 'OWNER-SESSION-TOKEN-2',
};

async function putObject(peer: S3Peer, t: { after(fn: () => unknown): void }, body: string): Promise<void> {
  const client = s3ClientFor(peer, t);
  await client.send(new CreateBucketCommand({ Bucket: 'shop' }));
  await client.send(new PutObjectCommand({ Bucket: 'shop', Key: 'orders.jsonl', Body: body }));
}

/** An S3 dataset at `peer` with a stored key pair, and a viewer's token on it. */
async function s3Dataset(gw: TestGateway, peer: S3Peer): Promise<{ urn: string; token: string }> {
  const admin = await gw.adminToken();
  const secret = await createSecret(gw, admin, 's3', JSON.stringify(STORED));
  const properties = { endpoint: peer.endpoint, secret_urn: secret };
  const urn = await createDataset(gw, admin, { name: 'shop/orders.jsonl', platform: 's3', properties });
  const viewer = await gw.userToken('viewer');
  grantViewer(gw, urn, viewer.id);
  return { urn, token: viewer.token };
}

const keysOf = (peer: S3Peer) => ({ aws_access_key_id: peer.accessKeyId, aws_secret_access_key: peer.secretAccessKey });

test('s3: an override naming another S3 is refused unless the operator lists its host; nothing connects', async (t) => {
  const [dataset, theirs] = await Promise.all([startS3(t), startS3(t)]);
  await putObject(dataset, t, '{"id":1}\n');
  await putObject(theirs, t, '{"id":"theirs"}\n');
  const proxy = await countingProxy(t, theirs.endpoint);
  const gw = await startTestGateway(t);
  const { urn, token } = await s3Dataset(gw, dataset);

  const elsewhere = JSON.stringify({ ...keysOf(theirs), endpoint_url: proxy.endpoint });
  for (const transport of ['inline', 'sse', 'grpc', 'auto']) {
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token,
      json: { dataset_urn: urn, transport, credential_override: elsewhere },
    });
    assert.equal(res.status, 422, res.text);
    assert.deepEqual([res.json.detail.reason, res.json.detail.host], ['endpoint_not_allowed', proxy.host]);
  }
  for (const field of ['endpoint', 'endpoint_override', 'endpoint_url']) {
    const override = JSON.stringify({ ...keysOf(theirs), [field]: `${proxy.endpoint.toUpperCase()}/` });
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token,
      json: { dataset_urn: urn, credential_override: override },
    });
    assert.deepEqual([res.status, res.json.detail.reason], [422, 'endpoint_not_allowed'], field);
  }
  assert.equal(proxy.accepted(), 0, 'no connection was made to the endpoint the caller named');

  // The dataset's own endpoint, named again by the override with the caller's keys, is no re-targeting.
  const ownEndpoint = JSON.stringify({ ...keysOf(dataset), endpoint_url: dataset.endpoint });
  const own = await createJob(gw, token, { dataset_urn: urn, credential_override: ownEndpoint });
  assert.deepEqual(own.inline.data, [{ id: 1 }]);
});

test('s3: a listed endpoint gets the caller keys only, never the stored ones', async (t) => {
  const dataset = await startS3(t);
  await putObject(dataset, t, '{"id":1}\n');
  const attacker = await recordingListener(t);
  const gw = await startTestGateway(t, { retrieval: { endpointHosts: { s3: [`127.0.0.1:${attacker.port}`] } } });
  const { urn, token } = await s3Dataset(gw, dataset);
  const caller = { aws_access_key_id: 'AKIACALLER000000002', aws_secret_access_key: 'caller-secret' };
  const res = await gw.request('POST', '/api/retrieval/jobs', {
    token,
    json: { dataset_urn: urn, credential_override: JSON.stringify({ ...caller, endpoint_url: attacker.url }) },
  });
  assert.equal(res.status, 502, res.text);
  const seen = attacker.received();
  assert.match(seen, /authorization: AWS4-HMAC-SHA256 Credential=AKIACALLER000000002\//i);
  for (const value of Object.values(STORED)) assert.ok(!seen.includes(value), 'no stored credential was sent');
  assert.doesNotMatch(seen, /x-amz-security-token/i);
});

test('file and non-SASL Kafka datasets refuse a credential_override instead of ignoring it', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'meshgate-egress-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  writeFileSync(join(root, 'orders.jsonl'), '{"id":1}\n');
  const broker = await recordingListener(t);
  const gw = await startTestGateway(t, { retrieval: { fsRoots: [root] } });
  const admin = await gw.adminToken();
  const file = await createDataset(gw, admin, {
    name: 'orders',
    platform: 'file',
    properties: { path: join(root, 'orders.jsonl') },
  });
  const kafka = await createDataset(gw, admin, {
    name: 'orders',
    platform: 'kafka',
    properties: { bootstrap_servers: `${broker.host}:${broker.port}`, security_protocol: 'SSL' },
  });
  const override = JSON.stringify({ username: 'bob', password: 'guess' });
  for (const [urn, platform] of [
    [file, 'file'],
    [kafka, 'kafka'],
  ]) {
    const res = await gw.request('POST', '/api/retrieval/jobs', {
      token: admin,
      json: { dataset_urn: urn, credential_override: override },
    });
    assert.equal(res.status, 422, res.text);
    assert.deepEqual(
      [res.json.detail.reason, res.json.detail.platform],
      ['credential_override_not_accepted', platform],
    );
  }
  assert.equal(broker.connections(), 0);
  assert.deepEqual((await createJob(gw, admin, { dataset_urn: file })).inline.data, [{ id: 1 }]);
});
