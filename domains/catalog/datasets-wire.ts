/**
 * Dataset wire shapes: the create, update and schema bodies
 * (unknown keys ignored) and the `Dataset` response.
 */
import { z } from 'zod';
import type { DatasetRow } from './datasets-store.ts';
import { TOKEN_PATTERN } from './urn.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what names may not hold.
const CONTROL = /[\u0000-\u001f\u007f]/;

export const catalogName = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((s) => !CONTROL.test(s), 'must not contain control characters');
export const token = z.string().regex(TOKEN_PATTERN, 'letters, digits, `_`, `.` and `-` only');
export const tags = z
  .array(z.string().max(256))
  .max(256)
  .nullish()
  .transform((v) => v ?? []);
export const properties = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? {});
export const description = z.string().max(16_384).nullish();
export const urnField = z.string().min(1).max(16_384);

export const schemaBody = z.object({
  name: z.string().max(4096).nullish(),
  platform: z.string().max(128).nullish(),
  version: z.number().int().nullish(),
  fields: z
    .array(
      z.looseObject({
        name: z.string().min(1).max(4096),
        type: z.string().min(1).max(1024),
        description: z.string().max(16_384).nullish(),
      }),
    )
    .max(10_000)
    .nullish()
    .transform((v) => v ?? []),
});
export type SchemaBody = z.infer<typeof schemaBody>;

export const datasetCreateBody = z.object({
  name: catalogName(4096),
  platform: token,
  environment: token.nullish().transform((v) => v ?? 'PROD'),
  description,
  tags,
  properties,
  dataset_schema: schemaBody.nullish(),
  container_urn: urnField.nullish(),
  writable: z
    .boolean()
    .nullish()
    .transform((v) => v ?? false),
  storage: z.unknown().optional(),
});
export type DatasetCreate = z.infer<typeof datasetCreateBody>;

/** `DatasetUpdate`; `properties` replaces the whole object; `updated_at` is accepted and ignored. */
export const datasetPatchBody = z.object({
  description: description.optional(),
  tags: z.array(z.string().max(256)).max(256).optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  container_urn: urnField.nullish(),
  dataset_schema: schemaBody.nullish(),
});
export type DatasetPatch = z.infer<typeof datasetPatchBody>;

/** A dataset's schema as stored and answered: the body's fields, the name and platform defaulting to the dataset's. */
export const storedSchemaAnswer = z.object({
  name: z.string(),
  platform: z.string(),
  version: z.number().int().nullable(),
  fields: z.array(z.looseObject({ name: z.string(), type: z.string(), description: z.string().nullish() })),
});
export type StoredSchema = z.output<typeof storedSchemaAnswer>;

export function storedSchema(body: SchemaBody, row: Pick<DatasetRow, 'name' | 'platform'>): StoredSchema {
  return {
    name: body.name ?? row.name,
    platform: body.platform ?? row.platform,
    version: body.version ?? null,
    fields: body.fields,
  };
}

/** Mirrors `path` ↔ `location` when only one is set (the server backfills `location`). */
export function mirrorLocation(props: Record<string, unknown>): Record<string, unknown> {
  if (typeof props.path === 'string' && props.location === undefined) return { ...props, location: props.path };
  if (typeof props.location === 'string' && props.path === undefined) return { ...props, path: props.location };
  return props;
}

const timestamp = z.string().describe('ISO 8601');

/**
 * The `Dataset` answer. The view below is typed by it, so a field the view adds, drops or changes fails the
 * build rather than leaving the document behind; `properties` and `storage` are the caller's own free-form data.
 */
export const datasetAnswer = z.object({
  name: z.string(),
  platform: z.string(),
  environment: z.string(),
  description: z.string().nullable(),
  tags: z.array(z.string()),
  properties: z.record(z.string(), z.unknown()),
  dataset_schema: z.union([storedSchemaAnswer, z.null()]),
  container_urn: z.string().nullable(),
  writable: z.boolean(),
  storage: z.unknown(),
  urn: z.string(),
  workroom_id: z.null(),
  created_at: timestamp,
  updated_at: timestamp,
  storage_binding: z.null(),
  content_revision: z.number().int(),
});
export type DatasetView = z.output<typeof datasetAnswer>;

export function datasetView(row: DatasetRow): DatasetView {
  return {
    name: row.name,
    platform: row.platform,
    environment: row.environment,
    description: row.description,
    tags: row.tags,
    properties: row.properties,
    // The column holds what storedSchema() made (written only there), typed loosely by the table.
    dataset_schema: (row.datasetSchema as StoredSchema | null) ?? null,
    container_urn: row.containerUrn,
    writable: row.writable,
    storage: row.storage ?? null,
    urn: row.urn,
    workroom_id: null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
    storage_binding: null,
    content_revision: row.contentRevision,
  };
}
