/**
 * A brokered user's local record has its own `disabled` switch beside the
 * federation allowlist: two real meshgates in shared_idp, the real OIDC
 * provider, the receiver's administrator disabling and enabling the user.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allow, sharedIdpMesh } from '../../../helpers/mesh.ts';

test('mesh admission refuses a disabled brokered user at once and admits it again once enabled', async (t) => {
  const { oidc, pair, source, receiver } = await sharedIdpMesh(t);
  const externalId = await allow(pair, oidc.subjectOf('fed-clr-u'));
  const token = await oidc.passwordToken('fed-clr-u', 'pw-u');
  const me = () => source.request('GET', `/api/mesh/${pair.sourceFedId}/auth/users/me`, { token });
  const first = await me();
  assert.equal(first.status, 200, first.text);
  const admin = await receiver.adminToken();
  const setActive = (active: boolean) =>
    receiver.request('PUT', `/api/auth/users/${first.json.sub}`, { token: admin, json: { active } });

  const off = await setActive(false);
  assert.equal(off.status, 200, off.text);
  assert.deepEqual([off.json.external_id, off.json.is_external, off.json.active], [externalId, true, false]);
  const refused = await me();
  assert.equal(refused.status, 403);
  assert.equal(refused.json.detail.reason, 'revoked_brokered_user');
  // The allowlist entry itself is untouched: the two switches are independent.
  const entries = await receiver.request('GET', `/api/cluster/federations/${pair.receiverFedId}/users`, {
    token: admin,
  });
  assert.equal(entries.json.find((e: { external_id: string }) => e.external_id === externalId).disabled_at, null);

  assert.equal((await setActive(true)).status, 200);
  const again = await me();
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json.sub, first.json.sub, 'the same local user, not a new one');
});
