/** Backup/restore test helpers: the real `meshgate backup|restore` processes and manifest surgery. */

import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execMeshgate } from './artifact.ts';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `meshgate <args>` (test/helpers/artifact.ts) with `env` added; its exit code and output. */
export async function meshgate(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  try {
    return { code: 0, ...(await execMeshgate(args, env)) };
  } catch (error) {
    const { code, stdout, stderr } = error as { code?: unknown; stdout: string; stderr: string };
    return { code: typeof code === 'number' ? code : null, stdout, stderr };
  }
}

/** Every regular file under `dir`, relative, with its mode. */
export function filesWithModes(dir: string, prefix = ''): { path: string; mode: number }[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return filesWithModes(dir, path);
    return [{ path, mode: statSync(join(dir, path)).mode & 0o777 }];
  });
}

interface ManifestFile {
  path: string;
  bytes: number;
  sha256: string;
}

/** Rewrites a backup's MANIFEST.json through `edit`, as a forger who knows the format would. */
export function editManifest(
  dir: string,
  edit: (manifest: { files: ManifestFile[]; [key: string]: unknown }) => void,
): void {
  const file = join(dir, 'MANIFEST.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  edit(manifest);
  writeFileSync(file, JSON.stringify(manifest));
}

/** The manifest entry a file's current bytes would have. */
export function entryOf(dir: string, path: string): ManifestFile {
  const bytes = readFileSync(join(dir, path));
  return { path, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}
