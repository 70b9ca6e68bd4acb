/**
 * The layer rule, checked at lint time: app → domains → gateway, never back.
 *   - gateway/ (the kernel) imports neither domains/ nor app/;
 *   - a domain imports another domain only through that domain's index.ts, and never app/;
 *   - only app/ (the composition root) imports domains/index.ts, the list of domains.
 * Tests may import anything. Specifiers are read from the static and dynamic
 * import/export clauses of each file (biome keeps one clause per statement).
 *   npx tsx scripts/check-imports.ts
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';

const SPECIFIER = /(?:^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*|^\s*import\s*|\bimport\(\s*)'(\.{1,2}\/[^']+)'/gm;

export interface Violation {
  file: string;
  target: string;
  rule: string;
}

/** The repository-relative files a source file imports by relative path. */
export function importsOf(file: string, source: string): string[] {
  return [...source.matchAll(SPECIFIER)].map((m) => normalize(join(dirname(file), m[1] as string)));
}

/** domains/<name>/... → <name>; anything else → null. */
function domainOf(path: string): string | null {
  const match = /^domains\/([^/]+)\//.exec(path);
  return match ? (match[1] as string) : null;
}

export function violationOf(file: string, target: string): string | null {
  const layer = file.split('/')[0];
  if (layer === 'test') return null;
  if (layer === 'gateway' && /^(domains|app)\//.test(target)) return 'the kernel imports no domain and not app/';
  if (target === 'domains/index.ts' && layer !== 'app') return 'only app/ imports the list of domains';
  const from = domainOf(file);
  if (from === null) return null;
  if (target.startsWith('app/')) return 'a domain never imports the composition root (app/)';
  const to = domainOf(target);
  if (to !== null && to !== from && target !== `domains/${to}/index.ts`)
    return `reach domains/${to} through its index.ts`;
  return null;
}

export function checkImports(files: readonly string[], read: (file: string) => string): Violation[] {
  return files.flatMap((file) =>
    importsOf(file, read(file)).flatMap((target) => {
      const rule = violationOf(file, target);
      return rule === null ? [] : [{ file, target, rule }];
    }),
  );
}

if (import.meta.main) {
  const roots = ['app', 'gateway', 'domains', 'scripts', 'bench'];
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', ...roots], {
    encoding: 'utf8',
  });
  const root = join(import.meta.dirname, '..');
  const files = listed.split('\n').filter((f) => f.endsWith('.ts'));
  const violations = checkImports(files, (file) => readFileSync(join(root, file), 'utf8'));
  for (const v of violations) process.stderr.write(`${v.file} imports ${relative('.', v.target)}: ${v.rule}\n`);
  if (violations.length > 0) process.exit(1);
}
