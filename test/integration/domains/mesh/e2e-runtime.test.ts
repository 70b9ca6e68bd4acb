/**
 * Model runtime and deployments through the mesh, end to end: a real
 * OpenAI-compatible upstream deployed on the receiver, reached by a
 * shared-realm persona holding `model` viewer through its allowlist recipe
 * at /api/mesh/{fed}/runtime/models/<id>/v1/chat/completions, streamed
 * incrementally across the hop; without the model relation, and on every
 * app or tool, the runtime URL answers the API's 404 (domains/serving/access.test.ts
 * holds the native callers' table); the remote deployments listing shows
 * granted models only, 403 without any.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request } from 'undici';
import { AUTHZ } from '../../../../domains/authz/index.ts';
import type { TestGateway } from '../../../helpers/gateway.ts';
import { allow, sharedIdpMesh } from '../../../helpers/mesh.ts';
import { deploy, Gate, readGatedCompletion, startAppServer, startModelServer } from '../../../helpers/upstreams.ts';

const CHAT = JSON.stringify({ model: 'test-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });

function chat(source: TestGateway, fed: string, modelId: string, token: string) {
  return request(`${source.gateway.httpsUrl}/api/mesh/${fed}/runtime/models/${modelId}/v1/chat/completions`, {
    method: 'POST',
    dispatcher: source.agent,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: CHAT,
  });
}

test('a model viewer streams chat through the mesh; elsewhere API and runtime URL answer one 404', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  const gate = new Gate();
  const model = await startModelServer(t, gate);
  const granted = await deploy(receiver, { kind: 'model', name: 'llm-granted', upstream: model.url });
  const other = await deploy(receiver, { kind: 'model', name: 'llm-other', upstream: model.url });
  await allow(pair, oidc.subjectOf('fed-clr-u'), [
    { subject: 'user:{{user_id}}', relation: 'viewer', object: `model:${granted.id}` },
  ]);
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');

  const res = await chat(source, pair.sourceFedId, granted.id, token);
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers['content-type']), /^text\/event-stream/);
  assert.equal(await readGatedCompletion(res.body, gate), 'Hello from the model');
  const seen = model.lastHeaders ?? {};
  assert.equal(seen.authorization, undefined, 'the caller token does not reach the upstream');
  assert.equal(seen['x-kz-mesh-peer-token'], undefined);
  assert.equal(
    JSON.parse(String(seen['x-user-attributes'])).clearance,
    'U',
    'attributes from the validated shared-realm token',
  );

  const denied = await chat(source, pair.sourceFedId, other.id, token);
  assert.equal(denied.statusCode, 404);
  assert.equal(((await denied.body.json()) as { detail: { reason: string } }).detail.reason, 'deployment_not_found');

  // Mesh callers bypass nothing: not `authenticated` visibility, not an app or a tool, even with a relation on it.
  const app = await startAppServer(t);
  const deployedApp = await deploy(receiver, { kind: 'app', name: 'dash', upstream: app.url });
  const shared = await deploy(receiver, {
    kind: 'model',
    name: 'llm-shared',
    upstream: model.url,
    visibility: 'authenticated',
  });
  const authz = receiver.gateway.deps.services.get(AUTHZ);
  const brokered = authz.list({ objectNs: 'model', objectId: granted.id })[0]?.subjectId as string;
  authz.write([
    {
      subject: { namespace: 'user', id: brokered },
      relation: 'viewer',
      object: { namespace: 'app', id: deployedApp.id },
    },
  ]);
  const via = `/api/mesh/${pair.sourceFedId}`;
  for (const [kind, id, expected] of [
    ['models', granted.id, 200],
    ['models', other.id, 404],
    ['models', shared.id, 404],
    ['apps', deployedApp.id, 404],
  ] as const) {
    const below = kind === 'models' ? '/v1/models' : '/';
    const api = await source.request('GET', `${via}/serving/deployments/${id}`, { token });
    const runtime = await source.request('GET', `${via}/runtime/${kind}/${id}${below}`, { token });
    assert.deepEqual([api.status, runtime.status], [expected, expected], `${kind}/${id}`);
    if (expected === 404) {
      const reasons = [api.json.detail.reason, runtime.json.detail.reason];
      assert.deepEqual(reasons, ['deployment_not_found', 'deployment_not_found']);
    }
  }
});

test('remote deployments listing: granted models only; 403 without any model relation', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  const model = await startModelServer(t);
  const app = await startAppServer(t);
  const granted = await deploy(receiver, { kind: 'model', name: 'llm-a', upstream: model.url });
  await deploy(receiver, { kind: 'model', name: 'llm-b', upstream: model.url });
  await deploy(receiver, { kind: 'app', name: 'dash', upstream: app.url });
  await allow(pair, oidc.subjectOf('fed-clr-u'), [
    { subject: 'user:{{user_id}}', relation: 'viewer', object: `model:${granted.id}` },
  ]);
  await allow(pair, oidc.subjectOf('fed-clr-s'), [
    {
      subject: 'user:{{user_id}}',
      relation: 'viewer',
      object: 'dataset:urn:li:dataset:(urn:li:dataPlatform:file,x,PROD)',
    },
  ]);

  const viewer = await oidc.passwordToken('fed-clr-u', 'pw-u');
  const listed = await source.request('GET', `/api/mesh/${pair.sourceFedId}/serving/deployments`, { token: viewer });
  assert.equal(listed.status, 200, listed.text);
  assert.deepEqual(
    listed.json.map((d: { id: string }) => d.id),
    [granted.id],
  );
  assert.equal(listed.json[0].upstream, undefined, 'the upstream address is for administrators only');
  const one = await source.request('GET', `/api/mesh/${pair.sourceFedId}/serving/deployments/${granted.id}`, {
    token: viewer,
  });
  assert.equal(one.status, 200, one.text);
  const create = await source.request('POST', `/api/mesh/${pair.sourceFedId}/serving/deployments`, {
    token: viewer,
    json: { kind: 'model', name: 'mesh-made', upstream: model.url },
  });
  assert.equal(create.status, 403, 'deploying is for native administrators');

  const noModel = await source.request('GET', `/api/mesh/${pair.sourceFedId}/serving/deployments`, {
    token: await oidc.passwordToken('fed-clr-s', 'pw-s'),
  });
  assert.equal(noModel.status, 403, noModel.text);
  assert.equal(noModel.json.detail.reason, 'rebac_denied');
  const all = await receiver.request('GET', '/api/serving/deployments?kind=all', {
    token: await receiver.adminToken(),
  });
  assert.equal(all.json.length, 3, 'the receiver holds three deployments');
});
