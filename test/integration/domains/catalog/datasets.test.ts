import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createDataset,
  datasetPaths,
  datasetService,
  grant,
  HOSTILE_NAMES,
  meshPrincipal,
  schemaPaths,
} from '../../../helpers/catalog.ts';
import { startTestGateway } from '../../../helpers/gateway.ts';

const NOT_FOUND = { detail: 'Dataset not found' };

test(
  'create answers 201 with the URN as a JSON string; the creator reads ' + 'it through every addressing form',
  async (t) => {
    const gw = await startTestGateway(t);
    const { token } = await gw.userToken('alice');
    const res = await gw.request('POST', '/api/catalog/datasets/', {
      token,
      json: {
        name: 'sdk-dataset-1',
        platform: 'file',
        description: 'd',
        tags: ['pii'],
        properties: { path: '/srv/x.parquet' },
        extra_ignored: 1,
      },
    });
    assert.equal(res.status, 201);
    assert.equal(res.text, JSON.stringify('urn:li:dataset:(urn:li:dataPlatform:file,sdk-dataset-1,PROD)'));
    for (const { form, path } of datasetPaths(res.json)) {
      const got = await gw.request('GET', path, { token });
      assert.equal(got.status, 200, form);
      assert.equal(got.json.urn, res.json, form);
      assert.deepEqual(
        got.json.properties,
        { path: '/srv/x.parquet', location: '/srv/x.parquet' },
        `${form}: path mirrored to location`,
      );
      assert.deepEqual(
        Object.keys(got.json).sort(),
        [
          'container_urn',
          'content_revision',
          'created_at',
          'dataset_schema',
          'description',
          'environment',
          'name',
          'platform',
          'properties',
          'storage',
          'storage_binding',
          'tags',
          'updated_at',
          'urn',
          'workroom_id',
          'writable',
        ],
        form,
      );
    }
    assert.equal(
      (await gw.request('POST', '/api/catalog/datasets', { token, json: {} })).status,
      307,
      'wrong trailing slash',
    );
    const head = await gw.request('HEAD', `/api/catalog/datasets/v2/${res.json}`, { token });
    assert.deepEqual([head.status, head.text], [200, '']);
  },
);

test('hostile names round-trip through create, every addressing form, patch, schema and delete', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  for (const name of HOSTILE_NAMES) {
    const urn = await createDataset(gw, token, { name, platform: 's3', environment: 'DEV' });
    assert.equal(urn, `urn:li:dataset:(urn:li:dataPlatform:s3,${name},DEV)`);
    for (const { form, path } of datasetPaths(urn)) {
      const got = await gw.request('GET', path, { token });
      assert.equal(got.status, 200, `${form} ${name.slice(0, 40)}: ${got.text.slice(0, 200)}`);
      assert.equal(got.json.name, name);
      const patched = await gw.request('PATCH', path, { token, json: { description: form } });
      assert.equal(patched.status, 200, `${form} patch`);
      assert.equal(patched.json.description, form);
    }
    for (const { form, path } of schemaPaths(urn)) {
      const put = await gw.request('PUT', path, {
        token,
        json: { name: form, fields: [{ name: 'c', type: 'string', nullable: true }] },
      });
      assert.equal(put.status, 200, `${form} schema put ${name.slice(0, 40)}`);
      const got = await gw.request('GET', path, { token });
      assert.deepEqual(
        got.json,
        { name: form, platform: 's3', version: null, fields: [{ name: 'c', type: 'string', nullable: true }] },
        form,
      );
    }
    const [first] = datasetPaths(urn);
    assert.equal((await gw.request('DELETE', first?.path as string, { token })).status, 204);
    assert.equal(
      (await gw.request('GET', `/api/catalog/datasets/by-urn?urn=${encodeURIComponent(urn)}`, { token })).status,
      404,
    );
  }
});

test('/schema after a raw URN is the sub-resource; a URN ending in /schema is addressed encoded', async (t) => {
  const gw = await startTestGateway(t);
  const token = await gw.adminToken();
  // A dataset URN always ends in ",<ENV>)", so the raw form `<urn>/schema` can only mean the schema.
  const urn = await createDataset(gw, token, {
    name: 'ends/with/schema',
    platform: 'file',
    dataset_schema: { fields: [{ name: 'a', type: 'int' }] },
  });
  const viaRaw = await gw.request('GET', `/api/catalog/datasets/v2/${urn}/schema`, { token });
  assert.deepEqual(viaRaw.json.fields, [{ name: 'a', type: 'int' }]);
  const item = await gw.request('GET', `/api/catalog/datasets/v2/${urn}`, { token });
  assert.equal(item.json.name, 'ends/with/schema');
  // Encoded, the same characters are one URN ("…PROD)/schema"), which does not exist.
  const whole = await gw.request('GET', `/api/catalog/datasets/v2/${encodeURIComponent(`${urn}/schema`)}`, { token });
  assert.deepEqual(whole.json, NOT_FOUND);
  const half = await gw.request('GET', `/api/catalog/datasets/v2/${encodeURIComponent(urn)}/schema`, { token });
  assert.deepEqual(half.json.fields, [{ name: 'a', type: 'int' }], 'encoded URN, raw /schema suffix');
  const noSchema = await createDataset(gw, token, { name: 'bare', platform: 'file' });
  assert.deepEqual((await gw.request('GET', `/api/catalog/datasets/v2/${noSchema}/schema`, { token })).json, {
    detail: 'Dataset schema not found',
  });
  const wrong = await gw.request('PATCH', `/api/catalog/datasets/v2/${urn}/schema`, { token, json: {} });
  assert.equal(wrong.status, 405);
});

test('ReBAC: owner writes, viewer and editor read, others get 404, admins see all', async (t) => {
  const gw = await startTestGateway(t);
  const owner = await gw.userToken('owner');
  const viewer = await gw.userToken('viewer');
  const editor = await gw.userToken('editor');
  const stranger = await gw.userToken('stranger');
  const admin = await gw.adminToken();
  const urn = await createDataset(gw, owner.token, { name: 'orders', platform: 'postgres' });
  await createDataset(gw, admin, { name: 'admins-own', platform: 'postgres' });
  grant(gw, viewer.id, 'viewer', urn);
  grant(gw, editor.id, 'editor', urn);
  const list = async (token: string, query = '') =>
    (await gw.request('GET', `/api/catalog/datasets/${query ? `?query=${query}` : ''}`, { token })).json.map(
      (d: { urn: string }) => d.urn,
    );
  assert.deepEqual(await list(owner.token), [urn]);
  assert.deepEqual(await list(viewer.token), [urn]);
  assert.deepEqual(await list(stranger.token), []);
  assert.equal((await list(admin)).length, 2);
  assert.deepEqual(await list(admin, 'ORDERS'), [urn], 'query: case-insensitive substring');
  assert.deepEqual(await list(admin, encodeURIComponent('postgres,admins')), [
    'urn:li:dataset:(urn:li:dataPlatform:postgres,admins-own,PROD)',
  ]);
  for (const { form, path } of datasetPaths(urn)) {
    for (const who of [viewer, editor]) {
      assert.equal((await gw.request('GET', path, { token: who.token })).status, 200, form);
      const patch = await gw.request('PATCH', path, { token: who.token, json: { description: 'x' } });
      assert.equal(patch.status, 403, `${form}: visible but not owner`);
      assert.equal(patch.json.detail.reason, 'rebac_denied');
      assert.equal((await gw.request('DELETE', path, { token: who.token })).status, 403, form);
    }
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await gw.request(method, path, {
        token: stranger.token,
        json: method === 'PATCH' ? { description: 'x' } : undefined,
      });
      assert.equal(res.status, 404, `${form} ${method} by a stranger`);
      assert.deepEqual(res.json, NOT_FOUND);
    }
  }
  for (const { form, path } of schemaPaths(urn)) {
    assert.deepEqual((await gw.request('PUT', path, { token: stranger.token, json: { fields: [] } })).json, {
      detail: 'Dataset not found or schema could not be updated',
    });
    assert.equal((await gw.request('PUT', path, { token: viewer.token, json: { fields: [] } })).status, 403, form);
    assert.equal((await gw.request('PUT', path, { token: owner.token, json: { fields: [] } })).status, 200, form);
    assert.equal((await gw.request('GET', path, { token: viewer.token })).status, 200, form);
    assert.equal((await gw.request('GET', path, { token: stranger.token })).status, 404, form);
  }
  const patched = await gw.request('PATCH', `/api/catalog/datasets/by-urn?urn=${encodeURIComponent(urn)}`, {
    token: owner.token,
    json: { tags: ['t'], properties: { location: 's3://b/k' }, updated_at: 'ignored' },
  });
  assert.deepEqual(
    patched.json.properties,
    { location: 's3://b/k', path: 's3://b/k' },
    'properties replaced, location mirrored to path',
  );
  assert.equal(
    (await gw.request('DELETE', `/api/catalog/datasets/v2/${urn}`, { token: admin })).status,
    204,
    'admin may delete',
  );
  assert.deepEqual(await list(viewer.token), [], 'tuples removed with the dataset');
});

test('mesh principals see only what this cluster granted them; no admin bypass', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const granted = await createDataset(gw, admin, { name: 'granted', platform: 'file' });
  const hidden = await createDataset(gw, admin, { name: 'hidden', platform: 'file' });
  const brokered = await gw.userToken('brokered');
  grant(gw, brokered.id, 'viewer', granted);
  const service = datasetService(gw);
  for (const roles of [[], ['admin']]) {
    const mesh = meshPrincipal(brokered.id, roles);
    assert.deepEqual(
      service.list(mesh, undefined).map((d) => d.urn),
      [granted],
      `roles ${roles}`,
    );
    assert.equal(service.get(mesh, granted).urn, granted);
    assert.throws(() => service.get(mesh, hidden), { status: 404 });
    assert.throws(() => service.patch(mesh, granted, { description: 'x' }), { status: 403, reason: 'rebac_denied' });
    assert.throws(() => service.delete(mesh, hidden), { status: 404 });
  }
  assert.equal(service.list(meshPrincipal('00000000-0000-4000-8000-00000000dead'), undefined).length, 0);
});

test('409 on a duplicate URN, 422 on bad bodies, 401 without credentials', async (t) => {
  const gw = await startTestGateway(t);
  const { token } = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  await createDataset(gw, token, { name: 'dup', platform: 'file' });
  const dup = await gw.request('POST', '/api/catalog/datasets/', {
    token: bob.token,
    json: { name: 'dup', platform: 'file', environment: 'PROD' },
  });
  assert.equal(dup.status, 409);
  assert.equal(dup.json.detail.reason, 'dataset_exists');
  for (const body of [
    {},
    { name: 'x' },
    { platform: 'file' },
    { name: '', platform: 'file' },
    { name: 'x', platform: 'a,b' },
    { name: 'x', platform: 'file', environment: 'P)' },
    { name: 'ctl\u0001', platform: 'file' },
    { name: 'x', platform: 'file', tags: 'pii' },
    { name: 'x', platform: 'file', properties: [] },
    { name: 'x', platform: 'file', dataset_schema: { fields: [{ type: 'int' }] } },
  ]) {
    const res = await gw.request('POST', '/api/catalog/datasets/', { token, json: body });
    assert.equal(res.status, 422, JSON.stringify(body));
    assert.ok(Array.isArray(res.json.detail));
  }
  assert.equal(
    (
      await gw.request('POST', '/api/catalog/datasets/', {
        token,
        body: '{not json',
        headers: { 'content-type': 'application/json' },
      })
    ).status,
    422,
  );
  const urn = await createDataset(gw, token, { name: 'ok', platform: 'file' });
  const badPatch = await gw.request('PATCH', `/api/catalog/datasets/v2/${urn}`, { token, json: { tags: [1] } });
  assert.equal(badPatch.status, 422);
  assert.equal(
    (await gw.request('PUT', `/api/catalog/datasets/v2/${urn}/schema`, { token, json: { fields: 'x' } })).status,
    422,
  );
  assert.equal((await gw.request('GET', '/api/catalog/datasets/by-urn', { token })).status, 422, 'urn query required');
  assert.equal((await gw.request('GET', '/api/catalog/datasets/')).status, 401);
  assert.equal((await gw.request('GET', `/api/catalog/datasets/v2/${urn}`)).status, 401);
});

test('the catalog root and health answer without credentials', async (t) => {
  const gw = await startTestGateway(t);
  assert.deepEqual((await gw.request('GET', '/api/catalog/health')).json, { status: 'ok' });
  assert.equal((await gw.request('GET', '/api/catalog/')).json.service, 'Platform Catalog Service');
});
