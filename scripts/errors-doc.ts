/**
 * Writes ERRORS.md from the error registry: every reason, its status, the
 * domain that owns it and when it is given. test/unit/scripts/errors-doc.test.ts
 * fails when the file and the registry disagree; re-run this to fix it.
 *   npx tsx scripts/errors-doc.ts
 */
import { writeFileSync } from 'node:fs';
import { ERROR_TABLES } from '../app/domains.ts';
import { buildErrorRegistry } from '../gateway/errors/registry.ts';

export function renderErrorsDoc(): string {
  const registry = buildErrorRegistry(ERROR_TABLES);
  const lines = [
    '# Error reasons',
    '',
    'Every refusal meshgate gives carries a stable `reason`. The body is FastAPI-style:',
    '`{"detail": {"reason": "<reason>", ...extra, "request_id": "..."}}`; ' +
      'a few reasons use a string `detail` that public',
    'clients match (noted below), and request validation failures are `422 {"detail": [{"loc", "msg", "type"}]}`.',
    'Every response carries `x-request-id`; a 500 carries nothing else, and the log has the cause under that id.',
    '',
    'This file is generated from the registry by `npx tsx scripts/errors-doc.ts`; a test keeps the two in sync.',
  ];
  for (const table of ERROR_TABLES) {
    lines.push('', `## ${table.domain}`, '', '| status | reason | when |', '|---|---|---|');
    for (const [reason, entry] of registry) {
      if (entry.domain !== table.domain) continue;
      const detail = entry.stringDetail ? ` Body: \`{"detail":"${entry.stringDetail}"}\`.` : '';
      lines.push(`| ${entry.status} | \`${reason}\` | ${entry.doc.replace(/\|/g, '\\|')}${detail} |`);
    }
  }
  return `${lines.join('\n')}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`)
  writeFileSync(new URL('../ERRORS.md', import.meta.url), renderErrorsDoc());
