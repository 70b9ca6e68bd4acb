import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STAGE_ORDER } from '../../gateway/pipeline/stage.ts';
import type { Authenticator } from '../../gateway/principal.ts';
import { compileHandlers } from '../../gateway/routing/compile.ts';

const authenticator: Authenticator = {
  authenticate: () => {
    throw new Error('not called');
  },
};

test('the ingress order is the one ARCHITECTURE.md states', () => {
  assert.deepEqual(STAGE_ORDER, ['requestId', 'accessLog', 'limits', 'canonicalPath', 'routeMatch', 'meshVerify', 'authenticate', 'authorize', 'dispatch']);
});

test('each route compiles only the stages it uses, in STAGE_ORDER', () => {
  const handle = () => ({ status: 200 });
  const doc = { summary: 'a route', answers: { 200: null } };
  const { api } = compileHandlers(
    [
      {
        routes: [
          { method: 'GET', path: '/anon', auth: 'none', doc, handle },
          { method: 'GET', path: '/user', auth: 'user', doc, handle },
          { method: 'GET', path: '/native', auth: 'user', nativeOnly: true, doc, handle },
          { method: 'GET', path: '/admin', auth: 'admin', doc, handle },
        ],
      },
    ],
    { authenticator },
  );
  const stagesOf = (path: string) => {
    const hit = api.lookup('GET', path);
    assert.equal(hit.kind, 'match');
    return hit.kind === 'match' ? hit.route.stages.map((s) => s.name) : [];
  };
  assert.deepEqual(stagesOf('/anon'), ['dispatch']);
  assert.deepEqual(stagesOf('/user'), ['authenticate', 'dispatch']);
  assert.deepEqual(stagesOf('/native'), ['authenticate', 'authorize', 'dispatch']);
  assert.deepEqual(stagesOf('/admin'), ['authenticate', 'authorize', 'dispatch']);
  for (const path of ['/anon', '/user', '/native', '/admin']) {
    const names = stagesOf(path);
    const positions = names.map((n) => STAGE_ORDER.indexOf(n));
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
      `${path} follows STAGE_ORDER`,
    );
  }
});

test('a service mounted twice is a wiring error at start', () => {
  const mount = { service: 'models', auth: 'none' as const, handle: () => ({ status: 200 }) };
  assert.throws(() => compileHandlers([{ mounts: [mount] }, { mounts: [mount] }], { authenticator }), /mounted twice/);
});
