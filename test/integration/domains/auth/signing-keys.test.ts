/**
 * Signing-key algorithm and rotation through a real gateway: RS256 by
 * default, ES256 on request, and a change of algorithm across a restart that
 * keeps every token the old key signed valid while new ones use the new key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { startTestGateway } from '../../../helpers/gateway.ts';

test(
  'ES256 → RS256 across a restart: old access token and PAT still valid, ' + 'new tokens RS256, JWKS publishes both',
  async (t) => {
    const gw = await startTestGateway(t, { auth: { signingAlgorithm: 'ES256' } });
    const oldAccess = await gw.adminToken();
    assert.equal(decodeProtectedHeader(oldAccess).alg, 'ES256');
    const oldPat = (await gw.request('POST', '/api/auth/pats?ttl_seconds=3600', { token: oldAccess })).json
      .token as string;
    const before = (await gw.request('GET', '/api/auth/jwks')).json;
    assert.deepEqual(
      before.keys.map((k: { alg: string }) => k.alg),
      ['ES256'],
    );

    (gw.overrides as { auth: { signingAlgorithm: string } }).auth.signingAlgorithm = 'RS256';
    await gw.restart();
    const newAccess = await gw.adminToken();
    assert.equal(decodeProtectedHeader(newAccess).alg, 'RS256');
    for (const token of [oldAccess, oldPat, newAccess]) {
      assert.equal(
        (await gw.request('GET', '/api/auth/users/me', { token })).status,
        200,
        decodeProtectedHeader(token).alg,
      );
    }
    const jwks = (await gw.request('GET', '/api/auth/jwks')).json;
    assert.deepEqual(
      jwks.keys.map((k: { alg: string; kid: string }) => [k.alg, k.kid]),
      [
        ['RS256', decodeProtectedHeader(newAccess).kid],
        ['ES256', before.keys[0].kid],
      ],
    );
    const discovery = (await gw.request('GET', '/api/auth/.well-known/openid-configuration')).json;
    assert.deepEqual(discovery.id_token_signing_alg_values_supported, ['RS256']);
    // A peer holding only the published set validates both generations.
    const set = createLocalJWKSet(jwks);
    for (const token of [oldAccess, newAccess])
      assert.equal((await jwtVerify(token, set, { issuer: discovery.issuer })).payload.preferred_username, 'admin');
    const diagnose = (await gw.request('GET', '/api/cluster/diagnose', { token: newAccess })).json;
    const overlap = diagnose.issues.find((i: { id: string }) => i.id === 'signing_key_overlap');
    assert.equal(overlap?.severity, 'info', JSON.stringify(diagnose));
    assert.equal(overlap.detail.retired_keys[0].kid, before.keys[0].kid);
  },
);
