import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { s3ClientFor, startS3 } from '../../../helpers/peers/s3.ts';

test('s3 peer: objects put through the AWS SDK come back byte for byte, ranges included', async (t) => {
  const started = performance.now();
  const s3 = await startS3(t);
  t.diagnostic(`moto started in ${Math.round(performance.now() - started)} ms at ${s3.endpoint}`);
  const client = s3ClientFor(s3, t);
  const body = 'id,name\n1,one\n2,two\n';
  await client.send(new CreateBucketCommand({ Bucket: 'datasets' }));
  await client.send(
    new PutObjectCommand({ Bucket: 'datasets', Key: 'sales/2024.csv', Body: body, ContentType: 'text/csv' }),
  );

  const got = await client.send(new GetObjectCommand({ Bucket: 'datasets', Key: 'sales/2024.csv' }));
  assert.equal(await got.Body?.transformToString(), body);
  assert.equal(got.ContentLength, body.length);
  const range = await client.send(
    new GetObjectCommand({ Bucket: 'datasets', Key: 'sales/2024.csv', Range: 'bytes=8-13' }),
  );
  assert.equal(await range.Body?.transformToString(), '1,one\n');
  const listed = await client.send(new ListObjectsV2Command({ Bucket: 'datasets', Prefix: 'sales/' }));
  assert.deepEqual(
    listed.Contents?.map((o) => o.Key),
    ['sales/2024.csv'],
  );
  await assert.rejects(client.send(new GetObjectCommand({ Bucket: 'datasets', Key: 'missing.csv' })), {
    name: 'NoSuchKey',
  });
});
