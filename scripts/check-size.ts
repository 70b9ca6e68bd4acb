/** House rules: source files stay under 400 lines and 120 columns; generated code is exempt. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const LIMIT = 400;
const COLUMNS = 120;
const files = execFileSync(
  'git',
  ['ls-files', '--cached', '--others', '--exclude-standard', 'app', 'gateway', 'domains', 'scripts', 'test', 'bench'],
  {
    encoding: 'utf8',
  },
)
  .split('\n')
  .filter((f) => /\.(ts|mts|js|mjs)$/.test(f) && !f.includes('/gen/'));
const read = (file: string): string[] => {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch {
    return [];
  }
};
const texts = files.map((file) => ({ file, text: read(file) }));
const wide = texts.flatMap(({ file, text }) =>
  file.endsWith('.ts') ? text.flatMap((line, i) => (line.length > COLUMNS ? [`${file}:${i + 1}`] : [])) : [],
);
const over = texts.map(({ file, text }) => ({ file, lines: text.length })).filter((f) => f.lines > LIMIT);
for (const { file, lines } of over) process.stderr.write(`${file}: ${lines} lines (limit ${LIMIT})\n`);
for (const at of wide) process.stderr.write(`${at}: line over ${COLUMNS} columns\n`);
process.exitCode = over.length > 0 || wide.length > 0 ? 1 : 0;
