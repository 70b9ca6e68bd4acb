/**
 * The shared realm's keys are fetched through the trust the realm names: when a record's CA is replaced (after a
 * compromise), the keys and tokens taken through the old one are not reused. Two real OpenID providers, each with
 * its own CA: a realm pointed at one provider's JWKS but trusting the other's CA cannot fetch, whatever was fetched
 * before through the right CA.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RealmVerifier, TokenFailed } from '../../../../domains/mesh/jwks.ts';
import { startOidcProvider } from '../../../helpers/peers/oidc.ts';

test('a realm whose CA changed fetches its keys again through the new CA, never reusing the old fetch', async (t) => {
  const provider = await startOidcProvider(t, { personas: [{ username: 'ana', password: 'pw' }] });
  const other = await startOidcProvider(t, { personas: [], realm: 'other' });
  const verifier = new RealmVerifier();
  t.after(() => verifier.close());
  const realm = (caPem: string) => () => ({
    issuer: provider.issuer,
    jwksUrl: provider.jwksUri,
    dispatcher: verifier.dispatcherFor(caPem),
  });
  const first = await provider.mintToken({ sub: provider.subjectOf('ana') });
  const payload = await verifier.verify(first, `shared ${verifier.trustTag(provider.caPem)}`, realm(provider.caPem));
  assert.equal(payload.sub, provider.subjectOf('ana'));

  const second = await provider.mintToken({ sub: provider.subjectOf('ana'), jti: 'second' });
  await assert.rejects(
    verifier.verify(second, `shared ${verifier.trustTag(other.caPem)}`, realm(other.caPem)),
    (error: unknown) => error instanceof TokenFailed && error.failure.kind === 'jwks',
    'the provider is not trusted by the new CA: no keys, though they were fetched before through the old one',
  );
  assert.notEqual(verifier.trustTag(provider.caPem), verifier.trustTag(other.caPem));
  assert.equal(verifier.trustTag(provider.caPem), verifier.trustTag(provider.caPem), 'one tag per CA');
});
