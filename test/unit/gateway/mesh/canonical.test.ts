/**
 * Signer/verifier contract over the shared test vectors: every
 * vector's canonical string and signature are reproduced by the signer and
 * accepted by the verifier; every negative case is refused with its reason.
 * The expected values were computed independently (Python hashlib/hmac).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  type CanonicalFields,
  canonicalizeRequest,
  canonicalizeResponse,
  pskKey,
  type ResponseCanonicalFields,
  signatureMatches,
  signCanonical,
  verifySignature,
} from '../../../../gateway/mesh/canonical.ts';

interface Negative {
  desc: string;
  fields?: Record<string, unknown>;
  key?: string;
  now?: number;
  signature?: string;
  expect: 'ok' | 'invalid_signature' | 'signature_expired' | 'signature_in_future';
}

interface Vector {
  description: string;
  kind: 'request' | 'response';
  key: string;
  fields: Record<string, unknown>;
  expected_canonical: string;
  expected_signature: string;
  now: number;
  negative: Negative[];
}

const dir = new URL('../../../fixtures/mesh-vectors/', import.meta.url);
const vectors = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({ file: f, vector: JSON.parse(readFileSync(new URL(f, dir), 'utf8')) as Vector }));

const canonicalOf = (v: Vector, fields: Record<string, unknown>) =>
  v.kind === 'request'
    ? canonicalizeRequest(fields as unknown as CanonicalFields)
    : canonicalizeResponse(fields as unknown as ResponseCanonicalFields);

function verdict(v: Vector, n: Negative): string {
  const fields = { ...v.fields, ...n.fields };
  const key = pskKey(n.key ?? v.key);
  const presented = n.signature ?? v.expected_signature;
  if (v.kind === 'response')
    return signatureMatches(key, canonicalOf(v, fields), presented) ? 'ok' : 'invalid_signature';
  const result = verifySignature(key, fields as unknown as CanonicalFields, presented, n.now ?? v.now);
  return result.ok ? 'ok' : result.reason;
}

test('there are vectors for requests, peer calls and responses', () => {
  assert.ok(vectors.length >= 4);
  assert.ok(vectors.some(({ vector }) => vector.kind === 'response'));
  assert.ok(vectors.some(({ vector }) => typeof vector.fields.body === 'string'));
});

for (const { file, vector } of vectors) {
  test(`${file}: the signer reproduces the canonical form and signature`, () => {
    const canonical = canonicalOf(vector, vector.fields);
    assert.equal(canonical, vector.expected_canonical);
    assert.equal(signCanonical(pskKey(vector.key), canonical), vector.expected_signature);
  });

  test(`${file}: the verifier accepts the vector`, () => {
    assert.equal(verdict(vector, { desc: 'as signed', expect: 'ok' }), 'ok');
  });

  for (const negative of vector.negative) {
    test(`${file}: ${negative.desc} → ${negative.expect}`, () => {
      assert.equal(verdict(vector, negative), negative.expect);
    });
  }
}

test('the timestamp window edges: 300 s old and 60 s ahead still pass', () => {
  const fields: CanonicalFields = {
    sourceClusterId: 'a',
    userId: 'u',
    roles: '',
    route: 'a',
    method: 'GET',
    uri: '/api/x',
    ts: 1000,
  };
  const key = pskKey('edge-key-edge-key');
  const sig = signCanonical(key, canonicalizeRequest(fields));
  assert.deepEqual(verifySignature(key, fields, sig, 1300), { ok: true });
  assert.deepEqual(verifySignature(key, fields, sig, 940), { ok: true });
  assert.deepEqual(verifySignature(key, fields, sig, 1301), { ok: false, reason: 'signature_expired' });
  assert.deepEqual(verifySignature(key, fields, sig, 939), { ok: false, reason: 'signature_in_future' });
});
