/**
 * Mesh proxy in shared_idp:
 * two real meshgates paired through the federation API, the real
 * oidc-provider as the shared realm, callers with real password-grant tokens.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { USER_DIRECTORY } from '../../../../domains/auth/index.ts';
import { AUTHZ } from '../../../../domains/authz/index.ts';
import type { Principal } from '../../../../gateway/principal.ts';
import { post } from '../../../helpers/federation.ts';
import { allow, sharedIdpMesh } from '../../../helpers/mesh.ts';

const DATASET = 'urn:li:dataset:(urn:li:dataPlatform:file,mesh-demo,PROD)';
const VIEWER_RECIPE = [
  { subject: 'user:{{user_id}}', relation: 'viewer', object: `dataset:${DATASET}` },
  { subject: 'user:{{user_id}}', relation: 'executor', object: 'cluster_jobs:__all__' },
];

test(
  'shared_idp: an allowlisted shared-realm user is provisioned once, ' + 'with its recipe, and seen as a mesh user',
  async (t) => {
    const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
    assert.deepEqual(pair.features, ['nonce', 'body-sha256', 'federation-id'], 'negotiated at pairing');
    const externalId = await allow(pair, oidc.subjectOf('fed-clr-u'), VIEWER_RECIPE);
    const token = await oidc.passwordToken('fed-clr-u', 'pw-u');

    const first = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.username, externalId);
    assert.notEqual(first.json.sub, oidc.subjectOf('fed-clr-u'), 'a receiver-local UUID, not the shared sub');
    assert.deepEqual(first.json.roles, []);
    assert.equal(first.json.attributes.clearance, 'U', 'attributes come from the validated token');
    assert.match(String(first.headers['x-kz-mesh-correlation-id']), /^[0-9a-f-]{36}$/);

    const user = receiver.gateway.deps.services.get(USER_DIRECTORY).byExternalId(externalId);
    assert.equal(user?.id, first.json.sub);
    assert.equal(user?.source, 'mesh');
    const entries = await receiver.request('GET', `/api/cluster/federations/${pair.receiverFedId}/users`, {
      token: await receiver.adminToken(),
    });
    const entry = entries.json.find((e: { external_id: string }) => e.external_id === externalId);
    assert.equal(entry.auto_provisioned, true);
    assert.equal(entry.local_user_id, user?.id);
    const authz = receiver.gateway.deps.services.get(AUTHZ);
    const principal = {
      userId: user?.id,
      roles: [],
      source: 'mesh',
      attributes: {},
      tenantId: '__default__',
    } as unknown as Principal;
    assert.equal(
      authz.check(principal, 'viewer', { namespace: 'dataset', id: DATASET }),
      true,
      'the recipe was rendered for the new user',
    );
    assert.equal(
      authz.check(principal, 'viewer', {
        namespace: 'dataset',
        id: 'urn:li:dataset:(urn:li:dataPlatform:file,other,PROD)',
      }),
      false,
    );

    // Selector forms: remote cluster id, exact name, unique prefix all reach the same user.
    for (const selector of [pair.receiverClusterId, 'receiver-label', 'receiver-l']) {
      const again = await source.request('GET', `/api/mesh/${encodeURIComponent(selector)}/api/auth/users/me`, {
        token,
      });
      assert.equal(again.status, 200, `${selector}: ${again.text}`);
      assert.equal(again.json.sub, first.json.sub, 'later requests map to the same local user');
    }
  },
);

test('shared_idp: refusals at the receiver pass through the source unchanged', async (t) => {
  const { oidc, pair, source } = await sharedIdpMesh(t);
  const onboarded = await allow(pair, oidc.subjectOf('fed-clr-s'));

  const stranger = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await oidc.passwordToken('fed-stranger', 'pw-x'),
  });
  assert.equal(stranger.status, 403);
  assert.equal(stranger.json.detail.reason, 'unauthorized_brokered_user');

  const native = await source.userToken('native-alice');
  const viaNative = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token: native.token });
  assert.equal(viaNative.status, 403);
  assert.equal(viaNative.json.detail.reason, 'peer_jwt_validation_failed');
  assert.equal(typeof viaNative.json.detail.error, 'string');

  const token = await oidc.passwordToken('fed-clr-s', 'pw-s');
  assert.equal((await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token })).status, 200);
  const revoked = await post(pair.receiver, `/${pair.receiverFedId}/users/${encodeURIComponent(onboarded)}/revoke`);
  assert.equal(revoked.status, 200, revoked.text);
  const after = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
  assert.equal(after.status, 403);
  assert.equal(after.json.detail.reason, 'revoked_brokered_user');
  assert.doesNotMatch(after.text, /rebac_denied/);
});

test('shared_idp: tenant admission at the source mesh boundary', async (t) => {
  const { oidc, pair, source } = await sharedIdpMesh(t);
  const noTenant = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await oidc.passwordToken('fed-no-tenant', 'pw-n'),
  });
  assert.equal(noTenant.status, 401);
  assert.deepEqual(noTenant.json, { detail: 'tenant_required' });
  const otherTenant = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await oidc.passwordToken('fed-other-tenant', 'pw-o'),
  });
  assert.equal(otherTenant.status, 403);
  assert.deepEqual(otherTenant.json, { detail: 'mesh_tenant_not_admitted' });
  // A shared-realm token is good for the mesh only, not for the source's own API.
  const direct = await source.request('GET', '/api/auth/users/me', {
    token: await oidc.passwordToken('fed-clr-u', 'pw-u'),
  });
  assert.equal(direct.status, 401);
});

test('shared_idp: an issuer the receiver does not trust refuses every caller', async (t) => {
  const { oidc, pair, source } = await sharedIdpMesh(t, {
    receiver: { federation: { peerTimeoutMs: 3000, trustedSharedIssuers: [] } },
  });
  await allow(pair, oidc.subjectOf('fed-clr-u'));
  const res = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await oidc.passwordToken('fed-clr-u', 'pw-u'),
  });
  assert.equal(res.status, 403);
  assert.equal(res.json.detail.reason, 'shared_idp_issuer_untrusted');
});

test('shared_idp: brokering disabled on the receiver refuses receiver-controlled admission', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  await allow(pair, oidc.subjectOf('fed-clr-u'));
  const put = await receiver.request('PUT', `/api/cluster/federations/${pair.receiverFedId}`, {
    token: await receiver.adminToken(),
    json: { brokering_enabled: false },
  });
  assert.equal(put.status, 200, put.text);
  const res = await source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, {
    token: await oidc.passwordToken('fed-clr-u', 'pw-u'),
  });
  assert.equal(res.status, 403);
  assert.equal(res.json.detail.reason, 'brokering_required_for_receiver_controlled');
});
