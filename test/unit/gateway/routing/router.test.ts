import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RouteDef } from '../../../../gateway/module.ts';
import { type CompiledRoute, parsePattern, RouteTable } from '../../../../gateway/routing/router.ts';

const route = (method: RouteDef['method'], path: string): CompiledRoute => ({
  def: { method, path, auth: 'none', handle: () => ({ status: 200 }) },
  segments: parsePattern(path),
  stages: [],
  upgradeStages: null,
});

const table = new RouteTable([
  route('GET', '/catalog/datasets/:urn'),
  route('GET', '/catalog/datasets/by-urn'),
  route('GET', '/catalog/datasets/v2/*urn'),
  route('POST', '/catalog/datasets/'),
  route(['GET', 'DELETE'], '/cluster/federations/:id'),
  route('POST', '/cluster/federations/:id/pair'),
  route('GET', '/auth/'),
  route('GET', '/retrieval/jobs'),
  route('HEAD', '/mesh/*rest'),
]);

const cases: { desc: string; method: string; path: string; expect: string; params?: Record<string, string> }[] = [
  { desc: 'static beats param', method: 'GET', path: '/catalog/datasets/by-urn', expect: '/catalog/datasets/by-urn' },
  {
    desc: 'param takes one decoded segment',
    method: 'GET',
    path: '/catalog/datasets/a%3Ab',
    expect: '/catalog/datasets/:urn',
    params: { urn: 'a:b' },
  },
  {
    desc: 'rest takes the decoded remainder, slashes included',
    method: 'GET',
    path: '/catalog/datasets/v2/urn:li:dataset:(x,a/b%2Fc,PROD)',
    expect: '/catalog/datasets/v2/*urn',
    params: { urn: 'urn:li:dataset:(x,a/b/c,PROD)' },
  },
  {
    desc: 'decoded once, never twice',
    method: 'GET',
    path: '/catalog/datasets/a%252Fb',
    expect: '/catalog/datasets/:urn',
    params: { urn: 'a%2Fb' },
  },
  {
    desc: 'method list',
    method: 'DELETE',
    path: '/cluster/federations/f1',
    expect: '/cluster/federations/:id',
    params: { id: 'f1' },
  },
  {
    desc: 'longer static path',
    method: 'POST',
    path: '/cluster/federations/f1/pair',
    expect: '/cluster/federations/:id/pair',
  },
  { desc: 'HEAD falls back to GET', method: 'HEAD', path: '/retrieval/jobs', expect: '/retrieval/jobs' },
  {
    desc: 'HEAD falls back to GET even when another path has a HEAD route',
    method: 'HEAD',
    path: '/auth/',
    expect: '/auth/',
  },
  { desc: 'an explicit HEAD route wins', method: 'HEAD', path: '/mesh/x/y', expect: '/mesh/*rest' },
  { desc: 'trailing-slash route', method: 'GET', path: '/auth/', expect: '/auth/' },
  {
    desc: 'missing trailing slash redirects',
    method: 'POST',
    path: '/catalog/datasets',
    expect: 'redirect:/catalog/datasets/',
  },
  {
    desc: 'extra trailing slash redirects',
    method: 'GET',
    path: '/retrieval/jobs/',
    expect: 'redirect:/retrieval/jobs',
  },
  { desc: 'known path, wrong method', method: 'PUT', path: '/retrieval/jobs', expect: 'method_not_allowed' },
  { desc: 'empty param segment does not match', method: 'GET', path: '/cluster/federations/', expect: 'miss' },
  { desc: 'unknown path', method: 'GET', path: '/nope', expect: 'miss' },
];

for (const c of cases) {
  test(`router: ${c.desc}`, () => {
    const hit = table.lookup(c.method, c.path);
    if (hit.kind === 'match') {
      assert.equal(hit.route.def.path, c.expect);
      if (c.params) assert.deepEqual(hit.params, c.params);
    } else if (hit.kind === 'redirect') {
      assert.equal(`redirect:${hit.path}`, c.expect);
    } else {
      assert.equal(hit.kind, c.expect);
    }
  });
}

test('router: a rest segment must be last', () => {
  assert.throws(() => parsePattern('/a/*rest/b'), /must be the last/);
});
