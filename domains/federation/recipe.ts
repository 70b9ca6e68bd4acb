/**
 * Allowlist tuple recipes:
 * strings `user:{{user_id}}` / `<namespace>:<object_id>`,
 * validated against the ReBAC model when the entry is added, rendered into
 * real tuples when mesh ingress provisions the brokered user.
 */
import { z } from 'zod';
import type { ValidationProblem } from '../../gateway/errors/api-error.ts';
import { DEFAULT_TENANT } from '../../gateway/principal.ts';
import type { TupleInput } from '../authz/index.ts';
import { isKnownRelation, MODEL, SUBJECT_NAMESPACES } from '../authz/index.ts';
import type { RecipeTuple } from './schema.ts';

export const recipeSchema = z
  .array(
    z.object({
      subject: z.string().trim().min(1).max(1024),
      relation: z.string().trim().min(1).max(64),
      object: z.string().trim().min(1).max(2048),
    }),
  )
  .max(256);

/** `<namespace>:<id>`, split on the FIRST colon: dataset URNs contain colons. */
export function splitRef(ref: string): { namespace: string; id: string } | null {
  const at = ref.indexOf(':');
  if (at <= 0 || at === ref.length - 1) return null;
  return { namespace: ref.slice(0, at), id: ref.slice(at + 1) };
}

/** Every problem of a recipe, located like a FastAPI 422 (`loc` under body.initial_tuples). */
export function recipeProblems(
  recipe: readonly RecipeTuple[],
  loc: (string | number)[] = ['body', 'initial_tuples'],
): ValidationProblem[] {
  const problems: ValidationProblem[] = [];
  recipe.forEach((tuple, i) => {
    const subject = splitRef(tuple.subject);
    if (!subject || !(SUBJECT_NAMESPACES as readonly string[]).includes(subject.namespace)) {
      problems.push({
        loc: [...loc, i, 'subject'],
        msg: `subject must be ${SUBJECT_NAMESPACES.map((n) => `${n}:<id>`).join(' or ')}, e.g. user:{{user_id}}`,
        type: 'subject_invalid',
      });
    }
    const object = splitRef(tuple.object);
    const model = object ? MODEL[object.namespace] : undefined;
    if (!object || !model) {
      problems.push({
        loc: [...loc, i, 'object'],
        msg: `object must be <namespace>:<id> with namespace one of ${Object.keys(MODEL).join(', ')}`,
        type: 'namespace_unsupported',
      });
      return;
    }
    if (model.fixedObjectId !== undefined && object.id !== model.fixedObjectId) {
      problems.push({
        loc: [...loc, i, 'object'],
        msg: `${object.namespace} takes only the object id ${model.fixedObjectId}`,
        type: 'object_id_invalid',
      });
    }
    if (!isKnownRelation(object.namespace, tuple.relation)) {
      problems.push({
        loc: [...loc, i, 'relation'],
        msg: `relation must be one of ${Object.keys(model.relations).join(', ')} for ${object.namespace}`,
        type: 'relation_unsupported',
      });
    }
  });
  return problems;
}

/** Renders a validated recipe for one brokered user: `{{user_id}}` → local UUID, `{{external_id}}` → external id. */
export function renderRecipe(
  recipe: readonly RecipeTuple[],
  values: { userId: string; externalId: string },
): TupleInput[] {
  const fill = (s: string) =>
    s.replaceAll('{{user_id}}', values.userId).replaceAll('{{external_id}}', values.externalId);
  return recipe.map((tuple) => {
    const subject = splitRef(fill(tuple.subject)) as { namespace: string; id: string };
    const object = splitRef(fill(tuple.object)) as { namespace: string; id: string };
    return { subject, relation: tuple.relation, object, tenantId: DEFAULT_TENANT };
  });
}
