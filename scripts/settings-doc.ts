/**
 * Rewrites README.md's "Operating it" table from the one settings table
 * (app/cli/settings.ts), as errors-doc.ts does for ERRORS.md; a unit test
 * (test/unit/cli-settings.test.ts) fails when the two are out of step.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { renderMarkdownRow, SERVE_SETTINGS } from '../app/cli/settings.ts';

const HEADER = '| flag | env | default | meaning |';
const readme = readFileSync('README.md', 'utf8').split('\n');
const start = readme.indexOf(HEADER);
if (start < 0) throw new Error(`README.md has no "${HEADER}" table`);
let end = start + 2;
while (readme[end]?.startsWith('|')) end += 1;
readme.splice(start + 2, end - start - 2, ...SERVE_SETTINGS.map(renderMarkdownRow));
writeFileSync('README.md', readme.join('\n'));
