/**
 * The operator's approved python package catalog: a JSON
 * file of {name, version, sha256[]}, read once at start. A job may name only
 * exact coordinates from it; anything else is refused before the job exists.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { JobsErrors } from './errors.ts';
import { normalizePackageName, parsePin } from './request.ts';
import type { ApprovedPackage } from './schema.ts';

const catalogSchema = z.array(
  z.strictObject({
    name: z.string().min(1),
    version: z.string().min(1),
    sha256: z.array(z.string().regex(/^[0-9a-f]{64}$/, 'must be a lowercase hex sha256')).min(1),
  }),
);

export class PackageCatalog {
  readonly #entries: ReadonlyMap<string, ApprovedPackage>;

  constructor(entries: readonly ApprovedPackage[]) {
    this.#entries = new Map(entries.map((e) => [key(e.name, e.version), e]));
  }

  /** Reads and validates the catalog file; a bad file stops start with its problems listed. */
  static load(file: string | null): PackageCatalog {
    if (file === null) return new PackageCatalog([]);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(`jobs.pythonPackages.catalogFile ${file}: ${(error as Error).message}`);
    }
    const parsed = catalogSchema.safeParse(raw);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `[${i.path.join('.')}] ${i.message}`).join('; ');
      throw new Error(`jobs.pythonPackages.catalogFile ${file}: ${problems}`);
    }
    return new PackageCatalog(parsed.data);
  }

  /** Resolves each `name==version` to its catalog entry (with hashes), or throws python_package_not_approved. */
  resolve(pins: readonly string[]): ApprovedPackage[] {
    return pins.map((pin) => {
      const { name, version } = parsePin(pin);
      const entry = this.#entries.get(key(name, version));
      if (!entry) throw JobsErrors.make.python_package_not_approved({ package: pin });
      return { name: entry.name, version: entry.version, sha256: [...entry.sha256] };
    });
  }
}

function key(name: string, version: string): string {
  return `${normalizePackageName(name)}==${version}`;
}
