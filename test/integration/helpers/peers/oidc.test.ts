import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRemoteJWKSet, customFetch, decodeProtectedHeader, jwtVerify } from 'jose';
import { fetch } from 'undici';
import { startOidcProvider } from '../../../helpers/peers/oidc.ts';

test(
  'oidc peer: a password grant yields a JWT with custom claims that ' +
    'verifies against the discovered JWKS over verified TLS',
  async (t) => {
    const started = performance.now();
    const idp = await startOidcProvider(t, {
      personas: [
        { username: 'alice', password: 'alice-pw', claims: { clearance: 'U' } },
        { username: 'tess', password: 'tess-pw', claims: { clearance: 'TS', country: 'GBR' } },
      ],
    });
    t.diagnostic(`oidc-provider started in ${Math.round(performance.now() - started)} ms, issuer ${idp.issuer}`);
    assert.match(idp.issuer, /^https:\/\/127\.0\.0\.1:\d+\/realms\/federation$/);

    const caFetch: typeof globalThis.fetch = ((url: string, init: object) =>
      fetch(url, { ...init, dispatcher: idp.dispatcher })) as never;
    const discovery = (await (await caFetch(`${idp.issuer}/.well-known/openid-configuration`)).json()) as Record<
      string,
      string
    >;
    assert.equal(discovery.issuer, idp.issuer);
    assert.equal(
      discovery.jwks_uri,
      `${idp.issuer}/protocol/openid-connect/certs`,
      'federation derives the JWKS from the issuer this way',
    );
    assert.equal(discovery.token_endpoint, `${idp.issuer}/protocol/openid-connect/token`);

    const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri as string), { [customFetch]: caFetch });
    const verify = (token: string) =>
      jwtVerify(token, jwks, { issuer: idp.issuer, audience: idp.audience, algorithms: ['ES256', 'RS256'] });

    const tessToken = await idp.passwordToken('tess', 'tess-pw');
    assert.equal(decodeProtectedHeader(tessToken).alg, 'ES256');
    const { payload } = await verify(tessToken);
    assert.equal(payload.sub, idp.subjectOf('tess'));
    assert.equal(payload.iss, idp.issuer);
    assert.equal(payload.aud, 'meshgate');
    assert.equal(payload.tenant_id, '__default__');
    assert.equal(payload.clearance, 'TS');
    assert.equal(payload.country, 'GBR');
    assert.equal(payload.preferred_username, 'tess');
    assert.ok(typeof payload.exp === 'number' && payload.exp > Date.now() / 1000, 'exp in the future');
    assert.equal((await verify(await idp.passwordToken('alice', 'alice-pw'))).payload.clearance, 'U');

    const wrong = await idp.passwordGrant('alice', 'not-her-password');
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, 'invalid_grant');
    assert.equal((await idp.passwordGrant('nobody', 'x')).body.error, 'invalid_grant');

    const sub = idp.subjectOf('alice');
    await assert.rejects(verify(await idp.mintToken({ sub, exp: Math.floor(Date.now() / 1000) - 60 })), {
      code: 'ERR_JWT_EXPIRED',
    });
    await assert.rejects(verify(await idp.mintToken({ sub, aud: 'someone-else' })), {
      code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
    });
    await assert.rejects(verify(await idp.mintToken({ sub }, { foreignKey: true })), {
      code: 'ERR_JWKS_NO_MATCHING_KEY',
    });
    assert.equal(
      (await verify(await idp.mintToken({ sub, tenant_id: 'other' }))).payload.tenant_id,
      'other',
      'minted tokens verify when their claims are valid',
    );

    await assert.rejects(fetch(idp.jwksUri), 'a client that does not trust the realm CA is refused');
  },
);
