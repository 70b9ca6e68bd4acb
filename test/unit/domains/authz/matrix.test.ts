/**
 * The data-driven authz matrix (OpenFGA style): every
 * test/fixtures/authz/*.json case runs against the real SQLite tuple store
 * and its in-memory index. Each check is asserted twice: on the live
 * service, and on a fresh service whose index was rebuilt from the same
 * database, which shows the index stays coherent with SQLite.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SATISFIED_BY } from '../../../../domains/authz/model.ts';
import { AuthzService, type TupleInput } from '../../../../domains/authz/service.ts';
import { createTupleStore } from '../../../../domains/authz/store.ts';
import { ApiError } from '../../../../gateway/errors/api-error.ts';
import { DEFAULT_TENANT, type Principal } from '../../../../gateway/principal.ts';
import { openTestDatabase } from '../../../helpers/engine.ts';

type Expectation = { error: string; status: number } | { allow: boolean; reason: string; via?: string };

interface Step {
  write?: string[];
  delete?: string;
  deleteObject?: string;
  deleteSubject?: string;
  tenant?: string;
  error?: string;
  status?: number;
  check?: [string, string, string, boolean][];
  decide?: [string, string, string, Expectation][];
  visible?: [string, string, string, string[] | 'all'][];
}

interface Case {
  description: string;
  model?: Record<string, Record<string, string[]>>;
  principals: Record<string, { id?: string; roles?: string[]; source?: 'local' | 'mesh'; tenant?: string }>;
  steps: Step[];
}

const FIXTURES = new URL('../../../fixtures/authz/', import.meta.url);
const TUPLE = /^([^:]*):(.*)#([a-z_*]+)@([^:]*):(.*)$/;

function parseTuple(text: string, tenant?: string): TupleInput {
  const m = TUPLE.exec(text);
  assert.ok(m, `fixture tuple ${text} is not ns:id#relation@ns:id`);
  const [, objectNs, objectId, relation, subjectNs, subjectId] = m as unknown as string[];
  return {
    object: { namespace: objectNs as string, id: objectId as string },
    relation: relation as string,
    subject: { namespace: subjectNs as string, id: subjectId as string },
    tenantId: tenant,
  };
}

function parseObject(text: string) {
  const at = text.indexOf(':');
  return { namespace: text.slice(0, at), id: text.slice(at + 1) };
}

function principal(c: Case, name: string): Principal {
  const p = c.principals[name];
  assert.ok(p, `fixture principal ${name} is not declared`);
  const source = p.source ?? 'local';
  return {
    userId: p.id ?? name,
    username: name,
    email: null,
    roles: p.roles ?? [],
    attributes: {},
    tenantId: p.tenant ?? DEFAULT_TENANT,
    source,
    authMethod: source === 'mesh' ? 'mesh' : 'jwt',
  };
}

function expectOutcome(step: Step, action: () => unknown, where: string): void {
  if (!step.error) {
    action();
    return;
  }
  assert.throws(
    action,
    (e: unknown) => e instanceof ApiError && e.reason === step.error && e.status === step.status,
    where,
  );
}

function runChecks(c: Case, step: Step, authz: AuthzService, label: string): void {
  for (const [who, relation, object, expected] of step.check ?? []) {
    assert.equal(
      authz.check(principal(c, who), relation, parseObject(object)),
      expected,
      `${label}: check ${who} ${relation} ${object}`,
    );
  }
  for (const [who, relation, object, expected] of step.decide ?? []) {
    const run = () => authz.decide(principal(c, who), relation, parseObject(object));
    if ('error' in expected) {
      assert.throws(
        run,
        (e: unknown) => e instanceof ApiError && e.reason === expected.error && e.status === expected.status,
        `${label}: decide ${who}`,
      );
    } else {
      assert.deepEqual(run(), expected, `${label}: decide ${who} ${relation} ${object}`);
    }
  }
  for (const [who, namespace, relation, expected] of step.visible ?? []) {
    const got = authz.visibleIds(principal(c, who), namespace, relation);
    assert.deepEqual(
      got === 'all' ? 'all' : [...got].sort(),
      expected === 'all' ? 'all' : [...expected].sort(),
      `${label}: visible ${who} ${namespace}`,
    );
  }
}

function applyStep(step: Step, authz: AuthzService, where: string): void {
  if (step.write)
    expectOutcome(step, () => authz.write(step.write?.map((t) => parseTuple(t, step.tenant)) ?? []), where);
  if (step.delete) {
    const t = parseTuple(step.delete, step.tenant);
    expectOutcome(step, () => authz.delete({ ...t, relation: t.relation === '*' ? null : t.relation }), where);
  }
  if (step.deleteObject)
    expectOutcome(step, () => authz.deleteObject(parseObject(step.deleteObject as string), step.tenant), where);
  if (step.deleteSubject) authz.deleteSubject(step.deleteSubject);
}

const files = readdirSync(FIXTURES).filter((f) => f.endsWith('.json'));

test('the matrix holds every named case, each a file of its own', () => {
  for (const name of [
    'implication',
    'tenant-isolation',
    'admin-bypass',
    'unknown-namespaces',
    'deletion',
    'look-alike-subjects',
  ]) {
    assert.ok(files.includes(`${name}.json`), name);
  }
});

for (const file of files) {
  const c = JSON.parse(readFileSync(new URL(file, FIXTURES), 'utf8')) as Case;
  test(`${file}: ${c.description}`, async (t) => {
    const { sql: sqlite } = await openTestDatabase(t);
    const authz = new AuthzService(createTupleStore(sqlite), () => new Date('2026-01-01T00:00:00Z'));
    for (const [namespace, relations] of Object.entries(c.model ?? {})) {
      for (const [relation, satisfiedBy] of Object.entries(relations)) {
        assert.deepEqual(
          [...(SATISFIED_BY.get(namespace)?.get(relation) ?? [])].sort(),
          [...satisfiedBy].sort(),
          `model ${namespace}#${relation}`,
        );
      }
    }
    c.steps.forEach((step, i) => {
      const where = `${file} step ${i}`;
      applyStep(step, authz, where);
      runChecks(c, step, authz, `${where} (live index)`);
      runChecks(
        c,
        step,
        new AuthzService(createTupleStore(sqlite), () => new Date()),
        `${where} (index rebuilt from SQLite)`,
      );
    });
  });
}
