import assert from 'node:assert/strict';
import { test } from 'node:test';
import { VerifiedTokenCache } from '../../../../domains/auth/tokens.ts';

const FUTURE = Math.floor(Date.now() / 1000) + 3600;
const token = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLWFsaWNlcy10b2tlbi0wMTIzNDU2Nzg5';

test('a cached token is a hit only as the whole token verified', () => {
  const cache = new VerifiedTokenCache<string>();
  cache.set(token, 'alice', FUTURE, 'jti-1');
  assert.equal(cache.get(token), 'alice');
  // The same text as a new string (each request's header is one) is the same token.
  assert.equal(cache.get([...token].join('')), 'alice');
  // Another header and payload carrying alice's signature (a forgery), and a prefix of the token, are misses.
  const [, , signature] = token.split('.');
  assert.equal(cache.get(`eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0.${signature}`), undefined);
  assert.equal(cache.get(signature as string), undefined);
  assert.equal(cache.get(token.slice(0, -1)), undefined);
  // A token without dots (an opaque credential) is kept whole.
  cache.set('opaque-credential', 'bob', FUTURE, 'jti-2');
  assert.equal(cache.get('opaque-credential'), 'bob');
});

test('a scoped entry is a hit only in its scope; scopes keep their entries apart', () => {
  const cache = new VerifiedTokenCache<string>();
  cache.set(token, 'as peer a', FUTURE, 'jti-1', 'peer a.example');
  cache.set(token, 'as peer b', FUTURE, 'jti-1', 'peer b.example');
  assert.equal(cache.get(token, 'peer a.example'), 'as peer a');
  assert.equal(cache.get(token, 'peer b.example'), 'as peer b');
  assert.equal(cache.get(token), undefined);
  assert.equal(cache.get(token, 'peer c.example'), undefined);
});

test('entries end at their expiry and by their jti', () => {
  const cache = new VerifiedTokenCache<string>();
  cache.set(token, 'alice', Math.floor(Date.now() / 1000) - 1, 'jti-1');
  assert.equal(cache.get(token), undefined);
  cache.set(token, 'alice', FUTURE, 'jti-1');
  cache.set('other.token.sig', 'bob', FUTURE, 'jti-2');
  cache.dropJti('jti-1');
  assert.equal(cache.get(token), undefined);
  assert.equal(cache.get('other.token.sig'), 'bob');
});
