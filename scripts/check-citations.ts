/**
 * The repository explains itself: no file may send its reader to a document the repository does not hold
 * (a design note, a wire contract, an issue tracker). Such a citation rots the day that document moves, and a
 * reader of a clone cannot follow it. Public standards (RFC 9113 §8.1, NIST SP 800-63B §5.2.2) and upstream
 * projects' documentation stay welcome: anyone can look those up.
 * Checked at lint time over source, tests, scripts, benchmarks, docs and the top-level pages:
 *   npx tsx scripts/check-citations.ts
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Citation {
  file: string;
  line: number;
  text: string;
}

/** Citations of documents outside the repository, searched in the whole text (comments, test names, messages). */
const OUTSIDE_DOCUMENTS: readonly RegExp[] = [
  /contract\s*§/i,
  /contract\.md/i,
  /interface\.md/i,
  /DESIGN\.md/,
  /STYLE\.md/,
  /\bSTYLE C\d+/,
  /(?<![\w.-])spec\//,
  /(?<![\w.-])shared\//,
  /\bissue \d+/i,
];

/**
 * Searched in comments only, where code may hold `#fff` or `'#1'` strings and parameters named `spec`:
 * an issue-tracker reference (`#12`) and a section of an outside spec (`spec: Limits`).
 */
const IN_COMMENTS: readonly RegExp[] = [
  /(?<![\w&/.#-])#\d+\b/,
  /\bspec: /i,
  /\bspec rules? \d/i,
  /\bspec "[A-Z]/i,
  /\bcontract (?:header )?decision/i,
];

/** Generated, vendored or binary files: nobody writes prose there. */
const SKIPPED = [/^node_modules\//, /^\.tools\//, /^proto\/gen\//, /^data\/migrations\//, /^package-lock\.json$/];

/** This check and its test must spell the patterns out. */
const SELF = new Set(['scripts/check-citations.ts', 'test/unit/scripts/check-citations.test.ts']);

const SLASH_COMMENTS = /\/\*[\s\S]*?\*\/|\/\/[^\n]*/g;
const HASH_COMMENTS = /(?:^|[ \t])#[^\n]*/gm;

/** The comment text of a file, blanked elsewhere so line numbers survive; prose files are all comment. */
export function commentsOf(file: string, text: string): string {
  if (/\.(md|txt)$/.test(file)) return text;
  const comments = /\.(ts|mts|js|mjs|proto)$/.test(file) ? SLASH_COMMENTS : HASH_COMMENTS;
  let kept = text.replace(/[^\n]/g, ' ');
  for (const match of text.matchAll(comments)) {
    const at = match.index ?? 0;
    kept = kept.slice(0, at) + match[0] + kept.slice(at + match[0].length);
  }
  return kept;
}

function linesMatching(file: string, text: string, patterns: readonly RegExp[]): Citation[] {
  const cites = (line: string) => patterns.some((pattern) => pattern.test(line));
  return text.split('\n').flatMap((line, index) => (cites(line) ? [{ file, line: index + 1, text: line.trim() }] : []));
}

export function citationsIn(file: string, text: string): Citation[] {
  if (SELF.has(file) || SKIPPED.some((pattern) => pattern.test(file))) return [];
  const inText = linesMatching(file, text, OUTSIDE_DOCUMENTS);
  const inComments = linesMatching(file, commentsOf(file, text), IN_COMMENTS);
  const reported = new Set(inText.map((c) => c.line));
  return [...inText, ...inComments.filter((c) => !reported.has(c.line))].sort((a, b) => a.line - b.line);
}

if (import.meta.main) {
  const root = join(import.meta.dirname, '..');
  const git = ['ls-files', '--cached', '--others', '--exclude-standard'];
  const listed = execFileSync('git', git, { cwd: root, encoding: 'utf8' });
  // A file in a merge conflict is listed once per stage: read it once.
  const citations = [...new Set(listed.split('\n'))]
    .filter((file) => file !== '')
    .flatMap((file) => {
      let text: string;
      try {
        text = readFileSync(join(root, file), 'utf8');
      } catch {
        return []; // listed but deleted in the working tree
      }
      return text.includes('\0') ? [] : citationsIn(file, text);
    });
  for (const c of citations) {
    process.stderr.write(`${c.file}:${c.line}: cites a document outside the repository: ${c.text}\n`);
  }
  if (citations.length > 0) process.exit(1);
}
