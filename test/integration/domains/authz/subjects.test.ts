/**
 * The subjects API (admin, native realm) and the resource grants API
 * through a real gateway: seeding users with attributes
 * that reach their tokens, flat grants, deletion with and without cascade.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestGateway } from '../../../helpers/gateway.ts';

const URN = 'urn:li:dataset:(urn:li:dataPlatform:file,mini-clearance,PROD)';
const grant = { object_namespace: 'dataset', object_id: URN, relation: 'viewer' };
const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());

test('PUT creates a subject whose attributes and password reach its tokens; a second PUT updates them', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const created = await gw.request('PUT', '/api/authz/subjects/fed-clr-s', {
    token: admin,
    json: { attributes: { clearance: 'S' }, password: 'fed-clr-s' },
  });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json.username, 'fed-clr-s');
  assert.deepEqual(created.json.attributes, { clearance: 'S' });
  assert.deepEqual(created.json.grants, []);
  assert.match(created.json.id, /^[0-9a-f-]{36}$/);
  assert.ok(created.json.created_at && created.json.updated_at);
  assert.ok(
    !('password' in created.json) && !created.text.includes('scrypt'),
    'neither the password nor its hash in the body',
  );

  const token = await gw.login('fed-clr-s', 'fed-clr-s');
  assert.equal(claims(token).clearance, 'S');
  const me = await gw.request('GET', '/api/auth/users/me', { token });
  assert.deepEqual(me.json.attributes, { clearance: 'S' });

  const updated = await gw.request('PUT', `/api/authz/subjects/${created.json.id}`, {
    token: admin,
    json: { attributes: { clearance: 'TS', country: 'GBR' }, password: 'new-password' },
  });
  assert.equal(updated.status, 200);
  assert.deepEqual(updated.json.attributes, { clearance: 'TS', country: 'GBR' });
  const next = await gw.login('fed-clr-s', 'new-password');
  assert.deepEqual([claims(next).clearance, claims(next).country], ['TS', 'GBR']);
  // An update without attributes keeps them.
  const keep = await gw.request('PUT', '/api/authz/subjects/fed-clr-s', { token: admin, json: {} });
  assert.deepEqual(keep.json.attributes, { clearance: 'TS', country: 'GBR' });
  assert.equal((await gw.request('GET', '/api/authz/subjects/fed-clr-s', { token: admin })).json.id, created.json.id);
});

test('PUT refuses reserved claim names, bad attribute names and bad usernames, writing nothing', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const reserved = await gw.request('PUT', '/api/authz/subjects/eve', {
    token: admin,
    json: { attributes: { roles: ['admin'], sub: 'x', clearance: 'U' } },
  });
  assert.equal(reserved.status, 422);
  assert.equal(reserved.json.detail.reason, 'attribute_name_reserved');
  assert.deepEqual(reserved.json.detail.names, ['roles', 'sub']);
  const badName = await gw.request('PUT', '/api/authz/subjects/eve', {
    token: admin,
    json: { attributes: { 'x y': 1 } },
  });
  assert.equal(badName.status, 422);
  const badUser = await gw.request('PUT', `/api/authz/subjects/${encodeURIComponent('-eve')}`, {
    token: admin,
    json: {},
  });
  assert.equal(badUser.status, 422);
  assert.equal(badUser.json.detail.reason, 'subject_name_invalid');
  const uuid = await gw.request('PUT', '/api/authz/subjects/0c3e5a90-1d2b-4c8e-a7f3-2b9d4e6f8a10', {
    token: admin,
    json: {},
  });
  assert.deepEqual(
    [uuid.status, uuid.json.detail.reason],
    [404, 'subject_not_found'],
    'a uuid never becomes a username',
  );
  assert.equal((await gw.request('GET', '/api/authz/subjects/eve', { token: admin })).status, 404);
});

test('grants: POST (201), GET, DELETE in the flat form, and they decide checks', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  await gw.request('PUT', '/api/authz/subjects/fed-clr-u', {
    token: admin,
    json: { attributes: { clearance: 'U' }, password: 'fed-clr-u' },
  });
  const post = await gw.request('POST', '/api/authz/subjects/fed-clr-u/grants', { token: admin, json: grant });
  assert.equal(post.status, 201);
  assert.deepEqual(post.json, { ...grant, tenant_id: '__default__' });
  await gw.request('POST', '/api/authz/subjects/fed-clr-u/grants', {
    token: admin,
    json: { object_namespace: 'cluster_jobs', object_id: '__all__', relation: 'executor' },
  });
  const listed = await gw.request('GET', '/api/authz/subjects/fed-clr-u/grants', { token: admin });
  assert.deepEqual(
    listed.json.map((g: { relation: string }) => g.relation),
    ['viewer', 'executor'],
  );
  const subject = await gw.request('GET', '/api/authz/subjects/fed-clr-u', { token: admin });
  assert.equal(subject.json.grants.length, 2);

  const token = await gw.login('fed-clr-u', 'fed-clr-u');
  const check = (relation: string) =>
    gw.request('POST', '/api/auth/check', {
      token,
      json: {
        subject: { namespace: 'user', id: subject.json.id },
        relation,
        object: { namespace: 'dataset', id: URN },
      },
    });
  assert.equal((await check('viewer')).json.allow, true);
  assert.equal((await check('owner')).json.allow, false);

  const del = await gw.request('DELETE', '/api/authz/subjects/fed-clr-u/grants', { token: admin, json: grant });
  assert.equal(del.status, 204);
  assert.equal((await check('viewer')).json.allow, false);

  const refusals: [unknown, number, string][] = [
    [{ ...grant, object_namespace: 'secret' }, 403, 'namespace_unsupported'],
    [{ ...grant, relation: 'reader' }, 422, 'relation_unsupported'],
  ];
  for (const [json, status, reason] of refusals) {
    const res = await gw.request('POST', '/api/authz/subjects/fed-clr-u/grants', { token: admin, json });
    assert.deepEqual([res.status, res.json.detail.reason], [status, reason]);
  }
  const missing = await gw.request('POST', '/api/authz/subjects/nobody/grants', { token: admin, json: grant });
  assert.deepEqual([missing.status, missing.json.detail.reason], [404, 'subject_not_found']);
  assert.equal(
    (await gw.request('POST', '/api/authz/subjects/fed-clr-u/grants', { token: admin, json: { relation: 'viewer' } }))
      .status,
    422,
  );
});

test('DELETE refuses while grants remain, cascades on request, and never deletes the caller', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const put = await gw.request('PUT', '/api/authz/subjects/temp', { token: admin, json: {} });
  await gw.request('POST', '/api/authz/subjects/temp/grants', { token: admin, json: grant });
  const refused = await gw.request('DELETE', '/api/authz/subjects/temp', { token: admin });
  assert.deepEqual(
    [refused.status, refused.json.detail.reason, refused.json.detail.grants],
    [409, 'subject_has_grants', 1],
  );
  assert.equal((await gw.request('DELETE', '/api/authz/subjects/temp?cascade=grants', { token: admin })).status, 204);
  assert.equal((await gw.request('GET', '/api/authz/subjects/temp', { token: admin })).status, 404);
  const left = await gw.request('GET', `/api/auth/tuples/?subject_id=${put.json.id}`, { token: admin });
  assert.deepEqual(left.json, []);
  await gw.request('PUT', '/api/authz/subjects/plain', { token: admin, json: {} });
  assert.equal((await gw.request('DELETE', '/api/authz/subjects/plain', { token: admin })).status, 204);
  assert.equal((await gw.request('DELETE', '/api/authz/subjects/plain', { token: admin })).status, 404);
  const self = await gw.request('DELETE', '/api/authz/subjects/admin?cascade=grants', { token: admin });
  assert.deepEqual([self.status, self.json.detail.reason], [409, 'subject_is_caller']);
  assert.equal((await gw.request('DELETE', '/api/authz/subjects/temp?cascade=all', { token: admin })).status, 422);
});

test('the subjects API is admin-only: 401 anonymous, 403 for other users', async (t) => {
  const gw = await startTestGateway(t);
  const alice = await gw.userToken('alice');
  for (const [method, path] of [
    ['PUT', '/api/authz/subjects/x'],
    ['GET', '/api/authz/subjects/x'],
    ['DELETE', '/api/authz/subjects/x'],
    ['GET', '/api/authz/subjects/x/grants'],
    ['POST', '/api/authz/subjects/x/grants'],
    ['DELETE', '/api/authz/subjects/x/grants'],
  ] as const) {
    const anonymous = await gw.request(method, path, { json: grant });
    assert.equal(anonymous.status, 401, `${method} ${path}`);
    const user = await gw.request(method, path, { token: alice.token, json: grant });
    assert.deepEqual([user.status, user.json.detail.reason], [403, 'admin_required'], `${method} ${path}`);
  }
});

test('resource grants: admins and owners list and add grants on one object', async (t) => {
  const gw = await startTestGateway(t);
  const admin = await gw.adminToken();
  const alice = await gw.userToken('alice');
  const bob = await gw.userToken('bob');
  const path = `/api/authz/resources/dataset/grants?object_id=${encodeURIComponent(URN)}`;
  const add = await gw.request('POST', '/api/authz/resources/dataset/grants', {
    token: admin,
    json: { object_id: URN, subject: { namespace: 'user', id: alice.id }, relation: 'owner' },
  });
  assert.equal(add.status, 200);
  assert.equal(add.json.status, 'created');
  assert.deepEqual(add.json.subject, { namespace: 'user', id: alice.id });
  assert.match(add.json.zedtoken, /^\d+$/);
  const byOwner = await gw.request('POST', '/api/authz/resources/dataset/grants', {
    token: alice.token,
    json: { object_id: URN, subject: { namespace: 'user', id: bob.id }, relation: 'viewer' },
  });
  assert.equal(byOwner.json.status, 'created');
  assert.ok(Number(byOwner.json.zedtoken) > Number(add.json.zedtoken));
  const again = await gw.request('POST', '/api/authz/resources/dataset/grants', {
    token: alice.token,
    json: { object_id: URN, subject: { namespace: 'user', id: bob.id }, relation: 'viewer' },
  });
  assert.equal(again.json.status, 'exists');

  const listed = await gw.request('GET', path, { token: alice.token });
  assert.equal(listed.status, 200);
  assert.deepEqual(
    listed.json.map((g: { relation: string; subject: { id: string } }) => [g.relation, g.subject.id]),
    [
      ['owner', alice.id],
      ['viewer', bob.id],
    ],
  );
  assert.ok(listed.json.every((g: { grant_id: string; created_at: string }) => g.grant_id && g.created_at));
  assert.equal((await gw.request('GET', path, { token: bob.token })).status, 403);
  assert.equal((await gw.request('GET', path)).status, 401);
  assert.equal((await gw.request('GET', '/api/authz/resources/dataset/grants', { token: admin })).status, 422);
  const unknown = await gw.request('GET', '/api/authz/resources/secret/grants?object_id=s', { token: admin });
  assert.deepEqual([unknown.status, unknown.json.detail.reason], [403, 'namespace_unsupported']);
});
