import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  createDataset,
  datasetService,
  meshPrincipal,
  revealCurrent,
  secretsAccess,
} from '../../../helpers/catalog.ts';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

async function createSecret(gw: TestGateway, token: string, body: Record<string, unknown>, clobber = 'false') {
  return gw.request('POST', `/api/catalog/secrets/?clobber=${clobber}`, { token, json: body });
}

function secretPaths(urn: string): string[] {
  const enc = encodeURIComponent(urn);
  return [
    `/api/catalog/secrets/v2/${urn}`,
    `/api/catalog/secrets/v2/${enc}`,
    `/api/catalog/secrets/by-urn?urn=${enc}`,
    `/api/catalog/secrets/${enc}`,
  ];
}

test(
  'secrets: create answers the URN; get, list and delete by v2 (raw or ' +
    'encoded), the encoded path and by-urn never show the value',
  async (t) => {
    const gw = await startTestGateway(t);
    const { token } = await gw.userToken('alice');
    const res = await createSecret(gw, token, { name: 'demo', value: 's3cr3t-value', description: 'pg password' });
    assert.equal(res.status, 201);
    assert.equal(res.text, '"urn:li:dataHubSecret:demo"');
    for (const path of secretPaths(res.json)) {
      const got = await gw.request('GET', path, { token });
      assert.equal(got.status, 200, path);
      assert.deepEqual(got.json, {
        urn: 'urn:li:dataHubSecret:demo',
        name: 'demo',
        value: null,
        owner: 'urn:li:corpuser:alice',
        description: 'pg password',
        workroom_id: null,
        created_at: got.json.created_at,
        updated_at: got.json.updated_at,
      });
    }
    for (const path of ['/api/catalog/secrets/', '/api/catalog/secrets', '/api/catalog/secrets/?query=DEM']) {
      const list = await gw.request('GET', path, { token });
      assert.deepEqual(
        list.json.map((s: { urn: string; value: null }) => [s.urn, s.value]),
        [['urn:li:dataHubSecret:demo', null]],
        path,
      );
    }
    assert.deepEqual((await gw.request('GET', '/api/catalog/secrets/?query=nomatch', { token })).json, []);
    assert.equal(revealCurrent(gw, res.json), 's3cr3t-value', 'in-process consumers get the value');
    const hostile = await createSecret(gw, token, { name: 'a/b (c),%2F+ü', value: 'v' });
    assert.equal(hostile.json, 'urn:li:dataHubSecret:a/b (c),%2F+ü');
    assert.equal(
      (await gw.request('GET', `/api/catalog/secrets/v2/${encodeURIComponent(hostile.json)}`, { token })).json.name,
      'a/b (c),%2F+ü',
    );
    for (const [i, path] of secretPaths(res.json).entries()) {
      if (i > 0) assert.equal((await createSecret(gw, token, { name: 'demo', value: 'again' })).status, 201);
      assert.equal((await gw.request('DELETE', path, { token })).status, 204, path);
      assert.equal((await gw.request('GET', path, { token })).status, 404, path);
      assert.equal((await gw.request('DELETE', path, { token })).json.detail.reason, 'secret_not_found', path);
    }
    assert.equal((await createSecret(gw, token, { name: 'plain-path', value: 'v' })).status, 201);
    assert.equal(
      (await gw.request('POST', '/api/catalog/secrets', { token, json: { name: 'no-slash', value: 'v' } })).status,
      201,
      'both spellings',
    );
  },
);

test('secrets: 409 without clobber, replace with clobber, 422 on bad bodies', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const first = await createSecret(gw, alice.token, { name: 'pg', value: 'one' });
  const again = await createSecret(gw, alice.token, { name: 'pg', value: 'two' });
  assert.equal(again.status, 409);
  assert.equal(again.json.detail.reason, 'secret_exists');
  assert.equal(
    (await gw.request('POST', '/api/catalog/secrets/', { token: alice.token, json: { name: 'pg', value: 'two' } }))
      .status,
    409,
    'clobber defaults to false',
  );
  assert.equal(revealCurrent(gw, first.json), 'one');
  const replaced = await createSecret(gw, alice.token, { name: 'pg', value: 'two' }, 'true');
  assert.equal(replaced.status, 201);
  assert.equal(revealCurrent(gw, first.json), 'two');
  const hijack = await createSecret(gw, bob.token, { name: 'pg', value: 'bobs' }, 'true');
  assert.equal(hijack.status, 409, 'clobber needs the right to manage the existing secret');
  assert.equal(revealCurrent(gw, first.json), 'two');
  for (const body of [
    {},
    { name: 'x' },
    { value: 'v' },
    { name: '', value: 'v' },
    { name: 'x', value: '' },
    { name: 'x', value: 7 },
    { name: 'a\nb', value: 'v' },
  ]) {
    const res = await createSecret(gw, alice.token, body);
    assert.equal(res.status, 422, JSON.stringify(body));
  }
  assert.equal(
    (
      await gw.request('POST', '/api/catalog/secrets/?clobber=maybe', {
        token: alice.token,
        json: { name: 'q', value: 'v' },
      })
    ).status,
    422,
  );
  assert.equal((await gw.request('GET', '/api/catalog/secrets/by-urn', { token: alice.token })).status, 422);
  assert.equal((await gw.request('GET', '/api/catalog/secrets/')).status, 401);
});

test('secrets: visible and deletable by their owner and native admins only; owner naming rules', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const admin = await gw.adminToken();
  const urn = (await createSecret(gw, alice.token, { name: 'alice-secret', value: 'a' })).json;
  for (const path of secretPaths(urn)) {
    const seen = await gw.request('GET', path, { token: bob.token });
    assert.equal(seen.status, 404, path);
    assert.equal(seen.json.detail.reason, 'secret_not_found');
    assert.equal((await gw.request('DELETE', path, { token: bob.token })).status, 404, path);
    assert.equal((await gw.request('GET', path, { token: admin })).status, 200, path);
  }
  assert.deepEqual((await gw.request('GET', '/api/catalog/secrets/', { token: bob.token })).json, []);
  assert.equal((await gw.request('GET', '/api/catalog/secrets/', { token: admin })).json.length, 1);
  const asOther = await createSecret(gw, bob.token, { name: 'x', value: 'v', owner: 'urn:li:corpuser:alice' });
  assert.equal(asOther.status, 403);
  assert.equal(asOther.json.detail.reason, 'secret_owner_forbidden');
  const viaHeader = await gw.request('POST', '/api/catalog/secrets/', {
    token: bob.token,
    json: { name: 'y', value: 'v' },
    headers: { 'x-user-urn': 'urn:li:corpuser:alice' },
  });
  assert.equal(viaHeader.status, 403);
  assert.equal(
    (await createSecret(gw, bob.token, { name: 'z', value: 'v', owner: 'urn:li:corpuser:bob' })).status,
    201,
  );
  const forBob = await createSecret(gw, admin, { name: 'for-bob', value: 'v', owner: 'urn:li:corpuser:bob' });
  assert.equal(forBob.status, 201);
  assert.equal(
    (await gw.request('GET', `/api/catalog/secrets/v2/${forBob.json}`, { token: bob.token })).json.owner,
    'urn:li:corpuser:bob',
  );
  for (const owner of ['urn:li:corpuser:nobody', 'bob', 'urn:li:corpgroup:x']) {
    const res = await createSecret(gw, admin, { name: 'w', value: 'v', owner });
    assert.equal(res.status, 422, owner);
    assert.equal(res.json.detail.reason, 'secret_owner_unknown');
  }
  assert.equal(
    (await gw.request('DELETE', `/api/catalog/secrets/by-urn?urn=${encodeURIComponent(urn)}`, { token: admin })).status,
    204,
  );
});

test('datasets may reference only secrets their writer can see', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await gw.userToken('alice');
  const admin = await gw.adminToken();
  const adminSecret = (await createSecret(gw, admin, { name: 'admin-pg', value: 'root-pw' })).json;
  const aliceSecret = (await createSecret(gw, alice.token, { name: 'alice-pg', value: 'alice-pw' })).json;
  const stolen = await gw.request('POST', '/api/catalog/datasets/', {
    token: alice.token,
    json: {
      name: 'orders',
      platform: 'postgres',
      properties: { host: 'evil.example', credentials: { password: adminSecret } },
    },
  });
  assert.equal(stolen.status, 403);
  assert.deepEqual(stolen.json.detail.secret_urn, adminSecret);
  assert.equal(stolen.json.detail.reason, 'secret_reference_forbidden');
  const missing = await gw.request('POST', '/api/catalog/datasets/', {
    token: alice.token,
    json: { name: 'orders', platform: 'postgres', properties: { password: 'urn:li:dataHubSecret:nope' } },
  });
  assert.equal(missing.status, 403, 'absent and foreign look alike');
  const urn = await createDataset(gw, alice.token, {
    name: 'orders',
    platform: 'postgres',
    properties: { password: aliceSecret },
  });
  const patch = await gw.request('PATCH', `/api/catalog/datasets/v2/${urn}`, {
    token: alice.token,
    json: { properties: { password: adminSecret } },
  });
  assert.equal(patch.status, 403);
  const keep = await gw.request('PATCH', `/api/catalog/datasets/v2/${urn}`, {
    token: alice.token,
    json: { properties: { password: aliceSecret, db: 'x' } },
  });
  assert.equal(keep.status, 200);
  assert.equal(keep.json.properties.password, aliceSecret, 'reads show the reference as written');
  const inUse = datasetService(gw).forUse({ ...meshPrincipal(alice.id), source: 'local', authMethod: 'jwt' }, urn);
  assert.equal(secretsAccess(gw).reveal(inUse.properties.password as string), 'alice-pw');
  assert.equal(
    (
      await createDataset(gw, admin, {
        name: 'admin-orders',
        platform: 'postgres',
        properties: { password: adminSecret },
      })
    ).length > 0,
    true,
  );
});

test(
  'mesh principals see no secret, not even with a remote admin role ' + '(service level; the routes are native-only)',
  async (t) => {
    const gw = await startTestGateway(t);
    const alice = await gw.userToken('alice');
    const urn = (await createSecret(gw, alice.token, { name: 'pg', value: 'v' })).json;
    const service = secretsAccess(gw);
    for (const roles of [[], ['admin']]) {
      // Same receiver-local user id as the owner: arriving through the mesh still does not make it the owner.
      assert.equal(service.canUse(meshPrincipal(alice.id, roles), urn), false);
    }
    assert.equal(service.canUse({ ...meshPrincipal(alice.id), source: 'local', authMethod: 'jwt' }, urn), true);
  },
);
