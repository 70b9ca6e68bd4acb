/** The layer rule of scripts/check-imports.ts: app → domains → gateway, domains through each other's index.ts. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkImports, importsOf, violationOf } from '../../../scripts/check-imports.ts';

test('specifiers of static, type-only, re-export, side-effect and dynamic imports resolve against the file', () => {
  const source = [
    "import { a } from '../auth/index.ts';",
    "import type { B } from './b.ts';",
    "export { C } from '../../gateway/c.ts';",
    "import './side.ts';",
    "const lazy = await import('../routing/store.ts');",
    "import { z } from 'zod';",
    'import {',
    '  many,',
    "} from '../authz/model.ts';",
  ].join('\n');
  assert.deepEqual(importsOf('domains/serving/x.ts', source), [
    'domains/auth/index.ts',
    'domains/serving/b.ts',
    'gateway/c.ts',
    'domains/serving/side.ts',
    'domains/routing/store.ts',
    'domains/authz/model.ts',
  ]);
});

test('each forbidden edge is named, every allowed one passes', () => {
  const refused: [string, string][] = [
    ['gateway/http/context.ts', 'domains/auth/index.ts'],
    ['gateway/pipeline/run.ts', 'app/server.ts'],
    ['domains/serving/cli.ts', 'domains/authz/store.ts'],
    ['domains/retrieval/gates/binding.ts', 'domains/gates/catalog.ts'],
    ['domains/jobs/index.ts', 'domains/index.ts'],
    ['domains/jobs/index.ts', 'app/domains.ts'],
    ['scripts/errors-doc.ts', 'domains/index.ts'],
    ['gateway/module.ts', 'domains/index.ts'],
  ];
  for (const [file, target] of refused) assert.notEqual(violationOf(file, target), null, `${file} → ${target}`);
  const allowed: [string, string][] = [
    ['app/domains.ts', 'domains/index.ts'],
    ['app/server.ts', 'gateway/pipeline/run.ts'],
    ['domains/serving/cli.ts', 'domains/authz/index.ts'],
    ['domains/serving/cli.ts', 'domains/serving/service.ts'],
    ['domains/retrieval/gates/binding.ts', 'domains/retrieval/sources/types.ts'],
    ['domains/auth/index.ts', 'gateway/principal.ts'],
    ['test/unit/x.test.ts', 'domains/auth/users.ts'],
    ['scripts/errors-doc.ts', 'app/domains.ts'],
  ];
  for (const [file, target] of allowed) assert.equal(violationOf(file, target), null, `${file} → ${target}`);
});

test('checkImports reports the offending file and target', () => {
  const files: Record<string, string> = {
    'gateway/http/context.ts': "import type { X } from '../../domains/auth/users.ts';",
    'domains/mesh/jwks.ts': "import { VerifiedTokenCache } from '../auth/index.ts';",
  };
  const found = checkImports(Object.keys(files), (f) => files[f] as string);
  assert.deepEqual(
    found.map((v) => [v.file, v.target]),
    [['gateway/http/context.ts', 'domains/auth/users.ts']],
  );
});

test('the repository itself keeps the rule (the lint step runs the same check)', () => {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/check-imports.ts'], { cwd: root, stdio: 'pipe' });
});
