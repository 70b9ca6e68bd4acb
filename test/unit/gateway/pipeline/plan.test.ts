import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { HandlerInstance } from '../../../../gateway/module.ts';
import { STAGE_ORDER, STAGE_PLAN } from '../../../../gateway/pipeline/plan.ts';
import { compileHandlers } from '../../../../gateway/routing/compile.ts';
import { compileRpc } from '../../../../gateway/routing/rpc.ts';
import { testPlan } from '../../../helpers/request-plan.ts';

const handle = () => ({ status: 200 });
const doc = { summary: 'a route', answers: { 200: null } };
const upgrade = async () => {};

const instances: HandlerInstance[] = [
  {
    routes: [
      { method: 'GET', path: '/anon', auth: 'none', doc, handle },
      { method: 'GET', path: '/user', auth: 'user', doc, handle },
      { method: 'GET', path: '/native', auth: 'user', nativeOnly: true, doc, handle },
      { method: 'GET', path: '/admin', auth: 'admin', doc, handle },
    ],
    mounts: [
      { service: 'models', auth: 'optional', browserSession: true, handle, upgrade },
      { service: 'tools', auth: 'none', handle },
    ],
    rpc: { services: ['pkg.v1.Service'], load: () => Promise.resolve(() => {}) },
  },
];

const names = (stages: readonly { name: string }[] | null | undefined) => stages?.map((stage) => stage.name) ?? null;

test('the ingress order ARCHITECTURE.md draws is the plan’s', () => {
  const doc = readFileSync(new URL('../../../../ARCHITECTURE.md', import.meta.url), 'utf8');
  const diagram = /## Ingress flow\n+```\n([^`]+)```/.exec(doc)?.[1] ?? '';
  const known = new Set(STAGE_ORDER);
  // The stage names in the drawing, in reading order: TLS and the handler around them are not stages.
  const drawn = [...diagram.matchAll(/\b[a-z][A-Za-z]+\b/g)].map((m) => m[0]).filter((w) => known.has(w));
  assert.deepEqual(drawn, [...STAGE_ORDER]);
});

test('every listener runs the plan’s listener stages first, each named as its entry, in the plan’s order', () => {
  const listenerNames = STAGE_PLAN.filter((planned) => planned.scope === 'listener').map((planned) => planned.name);
  assert.deepEqual(listenerNames, STAGE_ORDER.slice(0, listenerNames.length), 'listener stages come before routes');
  const plan = testPlan();
  const routeNames: string[] = [];
  const compiled = compileHandlers(instances, plan);
  for (const route of [...compiled.mounts.values()]) routeNames.push(...(names(route.stages) ?? []));
  for (const name of routeNames) assert.ok(STAGE_ORDER.includes(name), `${name} is an entry of the plan`);
});

test('each route compiles only the stages it uses, in the plan’s order, decided at compile time', () => {
  const { api } = compileHandlers(instances, testPlan());
  const stagesOf = (path: string) => {
    const hit = api.lookup('GET', path);
    assert.equal(hit.kind, 'match');
    return hit.kind === 'match' ? hit.route : null;
  };
  assert.deepEqual(names(stagesOf('/anon')?.stages), ['dispatch']);
  assert.deepEqual(names(stagesOf('/user')?.stages), ['authenticate', 'dispatch']);
  assert.deepEqual(names(stagesOf('/native')?.stages), ['authenticate', 'authorize', 'dispatch']);
  assert.deepEqual(names(stagesOf('/admin')?.stages), ['authenticate', 'authorize', 'dispatch']);
  for (const path of ['/anon', '/user', '/native', '/admin']) {
    const positions = (names(stagesOf(path)?.stages) ?? []).map((n) => STAGE_ORDER.indexOf(n));
    assert.deepEqual(
      positions,
      [...positions].sort((a, b) => a - b),
      `${path} follows the plan`,
    );
    assert.equal(stagesOf(path)?.upgradeStages, null, `${path} is an API route: nothing to upgrade to`);
  }
});

test('an upgrade runs the same chain as a request to its mount, ending in the mount’s hook', () => {
  const { mounts } = compileHandlers(instances, testPlan());
  const models = mounts.get('models');
  assert.deepEqual(names(models?.stages), ['authenticate', 'dispatch']);
  assert.deepEqual(names(models?.upgradeStages), ['authenticate', 'dispatch']);
  assert.notEqual(models?.upgradeStages?.at(-1), models?.stages.at(-1), 'the upgrade ends in the hook, not handle');
  assert.equal(mounts.get('tools')?.upgradeStages, null, 'a mount without a hook takes no upgrades');
});

test('the RPC route is built by the same plan: no credential stage, only its dispatch', () => {
  const route = compileRpc(instances, testPlan())?.match('/pkg.v1.Service/Method');
  assert.deepEqual(names(route?.stages), ['dispatch']);
  assert.equal(route?.upgradeStages, null);
});

test('a service mounted twice is a wiring error at start', () => {
  const mount = { service: 'models', auth: 'none' as const, handle };
  assert.throws(() => compileHandlers([{ mounts: [mount] }, { mounts: [mount] }], testPlan()), /mounted twice/);
});
