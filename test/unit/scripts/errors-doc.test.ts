import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ERROR_TABLES } from '../../../app/domains.ts';
import { defineErrors } from '../../../gateway/errors/api-error.ts';
import { buildErrorRegistry } from '../../../gateway/errors/registry.ts';
import { renderErrorsDoc } from '../../../scripts/errors-doc.ts';

test('ERRORS.md lists exactly the registered reasons (regenerate: npx tsx scripts/errors-doc.ts)', () => {
  const doc = readFileSync(new URL('../../../ERRORS.md', import.meta.url), 'utf8');
  const documented = new Set([...doc.matchAll(/^\| \d{3} \| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]));
  const registered = new Set(buildErrorRegistry(ERROR_TABLES).keys());
  assert.deepEqual(
    [...registered].filter((r) => !documented.has(r)),
    [],
    'registered but not in ERRORS.md',
  );
  assert.deepEqual(
    [...documented].filter((r) => !registered.has(r as string)),
    [],
    'in ERRORS.md but not registered',
  );
  assert.equal(doc, renderErrorsDoc(), 'ERRORS.md is stale');
});

test('a reason declared by two domains fails at start', () => {
  const a = defineErrors('a', { same_reason: { status: 400, doc: 'x' } });
  const b = defineErrors('b', { same_reason: { status: 409, doc: 'y' } });
  assert.throws(() => buildErrorRegistry([a, b]), /same_reason/);
});

test('every reason is snake_case and has a documented 4xx/5xx status', () => {
  for (const [reason, entry] of buildErrorRegistry(ERROR_TABLES)) {
    assert.match(reason, /^[a-z][a-z0-9_]*$/);
    assert.ok(entry.status >= 400 && entry.status < 600, reason);
    assert.ok(entry.doc.length > 10, reason);
  }
});
