/**
 * Where a filesystem dataset may be read from: only
 * absolute paths under one of the allowed roots (PLATFORM_RETRIEVAL_FS_ROOTS),
 * never through a `..` segment and never through a symbolic link below the
 * root. The real path is compared with the lexical one, so a link planted
 * inside a root cannot point the reader elsewhere.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { RetrievalErrors } from '../../errors.ts';

function isUnder(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/** The real path to open, or 403 path_not_allowed / 404 when the file is absent. */
export async function allowedPath(raw: string, roots: readonly string[]): Promise<string> {
  const refuse = (problem: string) => RetrievalErrors.make.path_not_allowed({ problem });
  if (!isAbsolute(raw)) throw refuse('not_absolute');
  if (raw.split(/[\\/]/).includes('..')) throw refuse('dot_dot_segment');
  const lexical = resolve(raw);
  const root = roots.map((r) => resolve(r)).find((r) => isUnder(r, lexical));
  if (!root) throw refuse('outside_allowed_roots');
  let realRoot: string;
  let real: string;
  try {
    realRoot = await realpath(root);
    real = await realpath(lexical);
  } catch {
    throw RetrievalErrors.make.source_not_found({ path: raw });
  }
  // Any link between the root and the file changes the real path; the root itself may be a link.
  if (real !== join(realRoot, relative(root, lexical))) throw refuse('symbolic_link');
  return real;
}
