/**
 * The tuple API through a real gateway: nested writes,
 * deletes, check, filtered listings, admin-or-owner writes, and the 401/403/422
 * refusals, over HTTPS verified against the gateway's own CA.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway, type TestGateway } from '../../../helpers/gateway.ts';

const URN = 'urn:li:dataset:(urn:li:dataPlatform:file,sales/2026,PROD)';
const ds = (id = URN) => ({ namespace: 'dataset', id });
const user = (id: string) => ({ namespace: 'user', id });
const tuple = (subject: string, relation: string, object = ds()) => ({ subject: user(subject), relation, object });

/** A check's decision: an allow is 200, a deny 403 `{"detail": "access_denied", ...the decision}` (docs/wire.md). */
async function check(gw: TestGateway, token: string, body: unknown) {
  const res = await gw.request('POST', '/api/auth/check', { token, json: body });
  const decision = res.json as { allow: boolean; decision_id: string; reason: string; via?: string; detail?: string };
  if (decision.allow) assert.deepEqual([res.status, decision.detail], [200, undefined], res.text);
  else assert.deepEqual([res.status, decision.detail, decision.allow], [403, 'access_denied', false], res.text);
  assert.match(decision.decision_id, /^[0-9a-f-]{36}$/);
  assert.equal(typeof decision.reason, 'string');
  return decision;
}

test('an admin writes nested tuples (204), lists them flat, checks and deletes them', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const write = await gw.request('POST', '/api/auth/tuples', {
    token: admin,
    json: { ...tuple(alice.id, 'viewer'), tenant_id: '__default__' },
  });
  assert.equal(write.status, 204);
  assert.equal(write.text, '');
  // The public SDK may add the tenant as a header.
  const viaHeader = await gw.request('POST', '/api/auth/tuples', {
    token: admin,
    json: tuple(alice.id, 'viewer', ds('d-t2')),
    headers: { 'x-tenant-id': 't2' },
  });
  assert.equal(viaHeader.status, 204);
  assert.equal(
    (await gw.request('POST', '/api/auth/tuples', { token: admin, json: tuple(alice.id, 'viewer') })).status,
    204,
    'idempotent',
  );

  const listed = await gw.request('GET', '/api/auth/tuples/?tenant=__default__&object_namespace=dataset', {
    token: admin,
  });
  assert.equal(listed.status, 200);
  assert.deepEqual(listed.json, [
    {
      subject_namespace: 'user',
      subject_id: alice.id,
      resource_type: 'dataset',
      resource_id: URN,
      relation: 'viewer',
      tenant_id: '__default__',
    },
  ]);
  const t2 = await gw.request('GET', '/api/auth/tuples?tenant=t2', { token: admin });
  assert.deepEqual(
    t2.json.map((r: { resource_id: string }) => r.resource_id),
    ['d-t2'],
  );
  const bySubject = await gw.request('GET', `/api/auth/tuples/?subject_id=${alice.id}&relation=owner`, {
    token: admin,
  });
  assert.deepEqual(bySubject.json, []);

  const yes = await check(gw, alice.token, tuple(alice.id, 'viewer'));
  assert.equal(yes.allow, true);
  assert.equal(yes.reason, 'direct_tuple');
  assert.match(yes.decision_id, /^[0-9a-f-]{36}$/);
  assert.ok(
    gw.logs.some((l) => l.includes(yes.decision_id) && l.includes('authz decision')),
    'the decision is logged under its id',
  );
  assert.equal((await check(gw, alice.token, tuple(alice.id, 'editor'))).allow, false);

  const del = await gw.request('DELETE', '/api/auth/tuples', { token: admin, json: { ...tuple(alice.id, 'viewer') } });
  assert.equal(del.status, 204);
  const after = await check(gw, alice.token, tuple(alice.id, 'viewer'));
  assert.deepEqual([after.allow, after.reason], [false, 'no_matching_tuple']);
});

test('tuples survive a restart: the check index is rebuilt from SQLite at init', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await gw.userToken('alice');
  await gw.request('POST', '/api/auth/tuples', { token: await gw.adminToken(), json: tuple(alice.id, 'owner') });
  await gw.restart();
  const again = await gw.login('alice', 'alice-password');
  const res = await check(gw, again, tuple(alice.id, 'viewer'));
  assert.deepEqual([res.allow, res.reason, res.via], [true, 'implied_by_tuple', 'owner']);
});

test('writing needs a native admin or an owner of the object; owners manage their object only', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const denied = await gw.request('POST', '/api/auth/tuples', { token: alice.token, json: tuple(alice.id, 'owner') });
  assert.equal(denied.status, 403);
  assert.equal(denied.json.detail.reason, 'rebac_denied');
  assert.equal(denied.json.detail.relation, 'owner');

  assert.equal(
    (await gw.request('POST', '/api/auth/tuples', { token: admin, json: tuple(alice.id, 'owner') })).status,
    204,
  );
  assert.equal(
    (await gw.request('POST', '/api/auth/tuples', { token: alice.token, json: tuple(bob.id, 'viewer') })).status,
    204,
  );
  assert.equal((await check(gw, bob.token, tuple(bob.id, 'viewer'))).allow, true);
  // An owner of one object has no say over another, nor in another tenant.
  const other = await gw.request('POST', '/api/auth/tuples', {
    token: alice.token,
    json: tuple(bob.id, 'viewer', ds('other')),
  });
  assert.equal(other.status, 403);
  const tenant = await gw.request('POST', '/api/auth/tuples', {
    token: alice.token,
    json: { ...tuple(bob.id, 'viewer'), tenant_id: 't2' },
  });
  assert.equal(tenant.status, 403);
  // bob (viewer) may not delete, alice (owner) may.
  assert.equal(
    (await gw.request('DELETE', '/api/auth/tuples', { token: bob.token, json: tuple(bob.id, 'viewer') })).status,
    403,
  );

  // Listing: bob sees his own tuple only; alice sees every tuple on her object.
  const bobList = await gw.request('GET', '/api/auth/tuples/', { token: bob.token });
  assert.deepEqual(
    bobList.json.map((r: { subject_id: string; relation: string }) => [r.subject_id, r.relation]),
    [[bob.id, 'viewer']],
  );
  const aliceList = await gw.request('GET', '/api/auth/tuples/?object_namespace=dataset', { token: alice.token });
  assert.equal(aliceList.json.length, 2);
  assert.deepEqual((await gw.request('GET', '/api/auth/tuples/?tenant=t2', { token: alice.token })).json, []);

  assert.equal(
    (
      await gw.request('DELETE', '/api/auth/tuples', {
        token: alice.token,
        json: { ...tuple(bob.id, 'viewer'), relation: null },
      })
    ).status,
    204,
  );
  assert.equal((await check(gw, bob.token, tuple(bob.id, 'viewer'))).allow, false);
  assert.equal(
    (await gw.request('DELETE', '/api/auth/tuples/object', { token: bob.token, json: { object: ds() } })).status,
    403,
  );
  assert.equal(
    (await gw.request('DELETE', '/api/auth/tuples/object', { token: alice.token, json: { object: ds() } })).status,
    204,
  );
  assert.deepEqual((await gw.request('GET', '/api/auth/tuples/', { token: admin })).json, []);
});

test('check: self for anyone, others for admins and owners; admin bypass is reported', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const me = await gw.request('GET', '/api/auth/users/me', { token: admin });
  const bypass = await check(gw, admin, { subject: user(me.json.sub), relation: 'owner', object: ds('anything') });
  assert.deepEqual([bypass.allow, bypass.reason], [true, 'admin_bypass']);
  const aboutAdmin = await check(gw, admin, {
    subject: user(me.json.sub),
    relation: 'executor',
    object: { namespace: 'cluster_jobs', id: '__all__' },
  });
  assert.equal(aboutAdmin.allow, true);
  await gw.request('POST', '/api/auth/tuples', { token: admin, json: tuple(alice.id, 'owner') });
  assert.equal((await check(gw, admin, tuple(bob.id, 'viewer'))).allow, false);
  assert.equal((await check(gw, alice.token, tuple(bob.id, 'viewer'))).allow, false, 'the owner may ask about bob');
  const nosy = await gw.request('POST', '/api/auth/check', { token: bob.token, json: tuple(alice.id, 'owner') });
  assert.equal(nosy.status, 403);
  assert.equal(nosy.json.detail.reason, 'rebac_denied');
});

test('tuples for unknown (e.g. source-cluster) users are accepted but never match a local user', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const sourceId = '0c3e5a90-1d2b-4c8e-a7f3-2b9d4e6f8a10';
  for (const id of [sourceId, `${alice.id}@0d3e5a90-1d2b-4c8e-a7f3-2b9d4e6f8a10`, alice.id.toUpperCase()]) {
    assert.equal(
      (await gw.request('POST', '/api/auth/tuples', { token: admin, json: tuple(id, 'viewer') })).status,
      204,
    );
  }
  assert.equal((await check(gw, alice.token, tuple(alice.id, 'viewer'))).allow, false);
  assert.equal((await check(gw, admin, tuple(sourceId, 'viewer'))).allow, true, 'stored under exactly that id');
});

test('refusals: 401 without credentials, 403 namespace_unsupported, 422 for relations, ids and bodies', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  for (const [method, path] of [
    ['POST', '/api/auth/tuples'],
    ['DELETE', '/api/auth/tuples'],
    ['DELETE', '/api/auth/tuples/object'],
    ['POST', '/api/auth/check'],
    ['GET', '/api/auth/tuples/'],
  ] as const) {
    const res = await gw.request(method, path, { json: tuple('x', 'viewer') });
    assert.equal(res.status, 401, `${method} ${path}`);
    assert.deepEqual(res.json, { detail: 'Not authenticated' });
  }
  const cases: [string, string, unknown, number, string][] = [
    ['POST', '/api/auth/tuples', tuple('x', 'viewer', { namespace: 'secret', id: 's' }), 403, 'namespace_unsupported'],
    ['POST', '/api/auth/check', tuple('x', 'viewer', { namespace: 'secret', id: 's' }), 403, 'namespace_unsupported'],
    ['DELETE', '/api/auth/tuples/object', { object: { namespace: 'widget', id: 'w' } }, 403, 'namespace_unsupported'],
    ['POST', '/api/auth/tuples', tuple('x', 'reader'), 422, 'relation_unsupported'],
    ['POST', '/api/auth/check', tuple('x', 'reader'), 422, 'relation_unsupported'],
    ['DELETE', '/api/auth/tuples', tuple('x', 'reader'), 422, 'relation_unsupported'],
    [
      'POST',
      '/api/auth/tuples',
      { ...tuple('x', 'viewer'), subject: { namespace: 'group', id: 'g' } },
      422,
      'relation_unsupported',
    ],
    [
      'POST',
      '/api/auth/tuples',
      tuple('x', 'executor', { namespace: 'cluster_jobs', id: 'job-1' }),
      422,
      'object_id_invalid',
    ],
    ['POST', '/api/auth/tuples', { ...tuple('x', 'viewer'), tenant_id: 'a' }, 422, 'tenant_mismatch'],
  ];
  for (const [method, path, json, status, reason] of cases) {
    const res = await gw.request(method, path, {
      token: admin,
      json,
      headers: reason === 'tenant_mismatch' ? { 'x-tenant-id': 'b' } : {},
    });
    assert.equal(res.status, status, `${method} ${path} ${JSON.stringify(json)}: ${res.text}`);
    assert.equal(res.json.detail.reason, reason);
    assert.match(res.json.detail.request_id, /.+/);
  }
  const missing = await gw.request('POST', '/api/auth/tuples', { token: admin, json: { relation: 'viewer' } });
  assert.equal(missing.status, 422);
  assert.ok(
    Array.isArray(missing.json.detail) && missing.json.detail.some((p: { loc: string[] }) => p.loc.includes('subject')),
  );
  const garbage = await gw.request('POST', '/api/auth/tuples', {
    token: admin,
    body: '{not json',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(garbage.status, 422);
  const badLimit = await gw.request('GET', '/api/auth/tuples/?limit=0', { token: admin });
  assert.equal(badLimit.status, 422);
  assert.deepEqual(
    (await gw.request('GET', '/api/auth/tuples/', { token: admin })).json,
    [],
    'no refused request wrote anything',
  );
});
