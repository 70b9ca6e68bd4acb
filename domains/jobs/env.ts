/**
 * What a job process sees: the caller's env_vars, then the
 * platform's identity variables under both the neutral `PLATFORM_*` names
 * and the upstream `KAMIWAZA_*` literals public jobs read. The platform's
 * names are set last, so a job cannot spoof whose job it is.
 */
import type { RuntimeJobSpec } from './runtimes/types.ts';
import type { JobRow } from './store.ts';

/**
 * A POSIX portable variable name (IEEE Std 1003.1, "Environment Variables"): the only names a job may
 * set, and the only ones the gateway ever writes into the file its sandboxed shell reads.
 */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function jobEnvironment(row: JobRow, apiUrl: string): Record<string, string> {
  const attrs = JSON.stringify(row.userAttrs);
  const platform: Record<string, string> = {};
  for (const prefix of ['PLATFORM', 'KAMIWAZA']) {
    platform[`${prefix}_USER_ID`] = row.userId;
    platform[`${prefix}_USER_ATTRS`] = attrs;
    platform[`${prefix}_API_URL`] = apiUrl;
  }
  platform.PLATFORM_JOB_ID = row.id;
  return { ...row.envVars, ...platform };
}

export function specFor(row: JobRow, apiUrl: string): RuntimeJobSpec {
  return {
    jobId: row.id,
    entrypoint: row.entrypoint,
    env: jobEnvironment(row, apiUrl),
    packages: row.pythonPackages,
    metadata: row.metadata,
  };
}
