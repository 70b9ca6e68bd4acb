/** Container wire shapes and the member-dataset cursor. */
import { z } from 'zod';
import { validationError } from '../../gateway/http/body.ts';
import type { ContainerRow } from './containers-store.ts';
import { catalogName, description, properties, tags, token, urnField } from './datasets-wire.ts';

export const containerCreateBody = z.object({
  name: catalogName(4096),
  platform: token.nullish(),
  description,
  tags,
  properties,
  parent_urn: urnField.nullish(),
});
export type ContainerCreate = z.infer<typeof containerCreateBody>;

/** `ContainerUpdate`; the URN does not change with the name. */
export const containerPatchBody = z.object({
  name: catalogName(4096).optional(),
  description: description.optional(),
  tags: z.array(z.string().max(256)).max(256).optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  parent_urn: urnField.nullish(),
});
export type ContainerPatch = z.infer<typeof containerPatchBody>;

export const membershipBody = z.object({ dataset_urn: urnField });

export const pageQuery = z.object({
  datasets_cursor: z.string().max(32_768).optional(),
  datasets_page_size: z.coerce.number().int().min(1).max(1000).default(100),
});

export interface MemberPage {
  datasets: string[];
  next: string | null;
}

export function encodeCursor(lastUrn: string): string {
  return Buffer.from(lastUrn, 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null;
  if (!/^[A-Za-z0-9_-]+$/.test(cursor))
    throw validationError([{ loc: ['query', 'datasets_cursor'], msg: 'not a cursor', type: 'value_error' }]);
  return Buffer.from(cursor, 'base64url').toString('utf8');
}

/** The `Container` answer; the view is typed by it. `datasets` is one page of member URNs, after the cursor. */
export const containerAnswer = z.object({
  name: z.string(),
  platform: z.string().nullable(),
  description: z.string().nullable(),
  tags: z.array(z.string()),
  properties: z.record(z.string(), z.unknown()),
  parent_urn: z.string().nullable(),
  urn: z.string(),
  workroom_id: z.null(),
  sub_containers: z.array(z.string()),
  datasets: z.array(z.string()),
  datasets_next_cursor: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export function containerView(
  row: ContainerRow,
  subContainers: string[],
  members: MemberPage,
): z.output<typeof containerAnswer> {
  return {
    name: row.name,
    platform: row.platform,
    description: row.description,
    tags: row.tags,
    properties: row.properties,
    parent_urn: row.parentUrn,
    urn: row.urn,
    workroom_id: null,
    sub_containers: subContainers,
    datasets: members.datasets,
    datasets_next_cursor: members.next,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
