/**
 * The job submit/run request, validated into
 * FastAPI-style 422 lists. Unknown fields are ignored;
 * runtime_env keeps only env_vars, the other keys are stripped silently.
 */
import { z } from 'zod';
import { ENV_NAME } from './env.ts';

const MAX_PACKAGES = 32;
const MAX_DELEGATED = 64;
const DATASET_OPS = ['discover', 'read', 'retrieve'] as const;
const MODEL_OPS = ['discover', 'chat'] as const;
/** PEP 440-ish exact pin: a bare name, `==`, a bare version; no extras, markers, URLs or ranges. */
const PIN = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([A-Za-z0-9](?:[A-Za-z0-9.+!_-]*[A-Za-z0-9])?)$/;

const operations = <T extends readonly [string, ...string[]]>(allowed: T) =>
  z
    .array(z.enum(allowed))
    .min(1)
    .refine((ops) => new Set(ops).size === ops.length, 'operations must be unique');

const delegatedAccess = z
  .object({
    datasets: z
      .array(
        z.object({
          urn: z
            .string()
            .startsWith('urn:li:dataset:', 'must be an exact dataset URN (urn:li:dataset:...)')
            .refine((urn) => !urn.includes('*'), 'wildcards are not allowed'),
          operations: operations(DATASET_OPS),
        }),
      )
      .max(MAX_DELEGATED)
      .default([]),
    models: z
      .array(z.object({ deployment_id: z.uuid(), operations: operations(MODEL_OPS) }))
      .max(MAX_DELEGATED)
      .default([]),
  })
  .refine((d) => d.datasets.length + d.models.length > 0, 'delegated_access must name at least one dataset or model');

/** Normalized project name (PEP 503), used to refuse duplicate names. */
export function normalizePackageName(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

const pythonPackages = z
  .array(z.string().regex(PIN, 'must be an exact pin name==version (no ranges, extras, markers or URLs)'))
  .max(MAX_PACKAGES)
  .refine(
    (pins) => new Set(pins.map((p) => normalizePackageName(p.split('==')[0] as string))).size === pins.length,
    'duplicate package names',
  );

export const jobRequestSchema = z.object({
  entrypoint: z.string().trim().min(1).max(65536),
  runtime_env: z
    .object({
      env_vars: z
        .record(
          z.string().regex(ENV_NAME, 'must be a shell variable name'),
          z.string().refine((v) => !v.includes('\0'), 'must not hold NUL'),
        )
        .default({}),
    })
    .nullish(),
  metadata: z.record(z.string().max(256), z.string().max(4096)).nullish(),
  timeout_seconds: z.number().int().min(1).max(86400).nullish(),
  delegated_access: delegatedAccess.nullish(),
  python_packages: pythonPackages.nullish(),
  cluster_selector: z.string().min(1).nullish(),
  /** The develop SDK's name for cluster_selector. */
  target_cluster: z.string().min(1).nullish(),
});

export type JobRequestInput = z.infer<typeof jobRequestSchema>;

export interface PackagePin {
  name: string;
  version: string;
}

export function parsePin(pin: string): PackagePin {
  const [, name, version] = PIN.exec(pin) as RegExpExecArray;
  return { name: name as string, version: version as string };
}
