/**
 * `/api/cluster/attribute-schema[/{name}]` (the SDK's
 * `declare_attribute`, `list_attributes`, `deprecate_attribute`,
 * `withdraw_attribute`). Parsing only, logic in attributes.ts. Reading is
 * open to any local user (not to mesh callers: which attributes are
 * sensitive is this realm's business); PUT and DELETE are native
 * administrators' (NativeRealmRequired).
 */
import { z } from 'zod';
import { parseQuery, readJson, validate } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import {
  ATTRIBUTE_AUTHORITIES,
  ATTRIBUTE_NAME,
  ATTRIBUTE_NAME_RULE,
  ATTRIBUTE_TYPES,
  type AttributeVocabulary,
  attributeAnswer,
  attributeRetiredAnswer,
} from './attributes.ts';

const declareBody = z.object({
  type: z.enum(ATTRIBUTE_TYPES),
  sensitive: z.boolean().default(false),
  authority: z.enum(ATTRIBUTE_AUTHORITIES).default('local_admin'),
  schema_version: z.string().min(1).max(32).default('1.0'),
});

const flag = z.enum(['true', 'false']).transform((v) => v === 'true');

const attributeName = z.string().regex(ATTRIBUTE_NAME, ATTRIBUTE_NAME_RULE);
const nameOf = (ctx: RequestContext) => validate(attributeName, ctx.params.name, 'path');
const nameParams = z.object({ name: attributeName });
const listQuery = z.object({ include_deprecated: flag.default(true) });
const deleteQuery = z.object({
  force: flag.optional(),
  subjects_holding_value: z.coerce.number().int().min(0).optional(),
});

export function attributeRoutes(vocabulary: AttributeVocabulary, maxBody: number): RouteDef[] {
  const admin = { auth: 'admin', nativeOnly: true } as const;
  return [
    {
      method: 'GET',
      path: '/cluster/attribute-schema',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary: 'The declared attribute vocabulary',
        query: listQuery,
        answers: { 200: z.object({ attributes: z.array(attributeAnswer), schema_version: z.string() }) },
      },
      handle(ctx) {
        const q = parseQuery(ctx.query, listQuery);
        return { status: 200, body: vocabulary.list(q.include_deprecated) };
      },
    },
    {
      method: 'GET',
      path: '/cluster/attribute-schema/:name',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary: 'One declared attribute',
        params: nameParams,
        answers: { 200: attributeAnswer },
        errors: ['attribute_not_found'],
      },
      handle: (ctx) => ({ status: 200, body: vocabulary.get(nameOf(ctx)) }),
    },
    {
      ...admin,
      method: 'PUT',
      path: '/cluster/attribute-schema/:name',
      doc: {
        summary: 'Declare an attribute (201), or confirm an identical declaration (200)',
        params: nameParams,
        body: declareBody,
        answers: { 200: attributeAnswer, 201: attributeAnswer },
        errors: ['attribute_name_reserved', 'attribute_shape_conflict'],
      },
      async handle(ctx) {
        const name = nameOf(ctx);
        const shape = await readJson(ctx.req, maxBody, declareBody);
        const { created, attribute } = vocabulary.declare(name, shape, principalOf(ctx).userId);
        return { status: created ? 201 : 200, body: attribute };
      },
    },
    {
      ...admin,
      method: 'DELETE',
      path: '/cluster/attribute-schema/:name',
      doc: {
        summary: 'Deprecate an attribute; with `force` set, withdraw it',
        params: nameParams,
        query: deleteQuery,
        answers: { 200: attributeRetiredAnswer },
        errors: ['attribute_not_found', 'attribute_in_use'],
      },
      handle(ctx) {
        const name = nameOf(ctx);
        const q = parseQuery(ctx.query, deleteQuery);
        // Without `force` a DELETE deprecates; with it (the SDK's withdraw_attribute) it withdraws.
        if (q.force === undefined) return { status: 200, body: vocabulary.deprecate(name) };
        const result = vocabulary.withdraw(name, q.force);
        if (result.forced) {
          ctx.logger.warn(
            {
              attribute: name,
              subjects_holding_value: result.subjects_holding_value,
              acknowledged: q.subjects_holding_value ?? null,
              actor: principalOf(ctx).userId,
            },
            'attribute withdrawn while subjects hold values',
          );
        }
        return { status: 200, body: result };
      },
    },
  ];
}
