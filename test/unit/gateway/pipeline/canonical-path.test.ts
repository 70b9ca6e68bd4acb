import assert from 'node:assert/strict';
import { test } from 'node:test';
import { problemWithPath } from '../../../../gateway/http/path-problem.ts';

const cases: [string, string | null][] = [
  ['/api/ping', null],
  ['/api/catalog/datasets/v2/urn%3Ali%3Adataset%3A(a%2Cb)', null],
  ['/api/catalog/datasets/v2/a%2Fb', null], // noted, judged by routeMatch
  ['/api/../etc/passwd', 'dot_segment'],
  ['/api/./ping', 'dot_segment'],
  ['/api/%2e%2e/x', 'dot_segment'],
  ['/api/%2E/x', 'dot_segment'],
  ['/api//ping', 'empty_segment'],
  ['//api/ping', 'empty_segment'],
  ['/api\\ping', 'forbidden_character'],
  ['/api/%5cping', 'forbidden_character'],
  ['/api/ping%00', 'forbidden_character'],
  ['/api/ping%0d%0aSet-Cookie:x', 'forbidden_character'],
  ['/api/\u0001', 'forbidden_character'],
  ['/api/%zz', 'bad_percent_encoding'],
  ['/api/%E0%A4%A', 'bad_percent_encoding'],
  ['http://evil/api/ping', 'not_origin_form'],
  ['*', 'not_origin_form'],
  ['/api/x/..', 'dot_segment'], // raw paths without escapes take a fast path: same answers
  ['/..', 'dot_segment'],
  ['/api/.well-known/x', null],
  ['/api/a..b/...', null],
  // one segment "..%2fetc" decodes to "../etc": not a dot segment, and %2F is refused by routeMatch
  ['/api/..%2fetc', null],
];

for (const [path, expected] of cases) {
  test(`canonicalPath: ${JSON.stringify(path)} → ${expected ?? 'ok'}`, () => {
    assert.equal(problemWithPath(path), expected);
  });
}
