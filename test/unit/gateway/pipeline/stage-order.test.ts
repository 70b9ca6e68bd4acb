import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ingressPrelude } from '../../../../app/listeners.ts';
import { loadConfig } from '../../../../gateway/config/load.ts';
import { createLoggers } from '../../../../gateway/log.ts';
import { STAGE_ORDER } from '../../../../gateway/pipeline/stage.ts';
import type { Authenticator } from '../../../../gateway/principal.ts';
import { compileHandlers } from '../../../../gateway/routing/compile.ts';

const STAGE_NAMES: ReadonlySet<string> = new Set(STAGE_ORDER);

const authenticator: Authenticator = {
  authenticate: () => {
    throw new Error('not called');
  },
};

test('the ingress order ARCHITECTURE.md draws is STAGE_ORDER', () => {
  const doc = readFileSync(new URL('../../../../ARCHITECTURE.md', import.meta.url), 'utf8');
  const diagram = /## Ingress flow\n+```\n([^`]+)```/.exec(doc)?.[1] ?? '';
  // The stage names in the drawing, in reading order: TLS and the handler around them are not stages.
  const drawn = [...diagram.matchAll(/\b[a-z][A-Za-z]+\b/g)].map((m) => m[0]).filter((w) => STAGE_NAMES.has(w));
  assert.deepEqual(drawn, [...STAGE_ORDER]);
});

test('the prelude every listener runs (app/listeners.ts) is STAGE_ORDER up to routeMatch, in that order', () => {
  const config = loadConfig({ env: {}, overrides: { dataDir: '/nonexistent' } });
  const { accessLog, close } = createLoggers('silent', { write: () => undefined });
  const prelude = ingressPrelude({ config, accessLog }).map((stage) => stage.name);
  close();
  assert.deepEqual(prelude, STAGE_ORDER.slice(0, STAGE_ORDER.indexOf('routeMatch')));
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
