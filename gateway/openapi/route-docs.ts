/**
 * Helpers for route documentation. `jsonObject` says only "a JSON object": an answer's shape belongs
 * in a zod schema beside the code that builds it (docs/api.md); the few answers still documented
 * this way are listed, with their reasons, by the API document's validity test.
 */
import { z } from 'zod';
import type { HttpMethod, RouteDef, RouteDoc } from '../module.ts';

export const jsonObject = z.looseObject({});
export const jsonObjects = z.array(jsonObject);

/**
 * One definition per method for a path whose handler serves several: each method has its own
 * body and answers in the document. `shared` adds what every method has (a URN query, reasons).
 */
export function perMethod(
  route: Omit<RouteDef, 'method' | 'doc'>,
  docs: Partial<Record<HttpMethod, RouteDoc>>,
  shared: Pick<RouteDoc, 'query' | 'errors'> = {},
): RouteDef[] {
  return (Object.entries(docs) as [HttpMethod, RouteDoc][]).map(([method, doc]) => ({
    ...route,
    method,
    doc: {
      ...doc,
      ...(shared.query || doc.query ? { query: z.object({ ...shared.query?.shape, ...doc.query?.shape }) } : {}),
      errors: [...(shared.errors ?? []), ...(doc.errors ?? [])],
    },
  }));
}

/** `{"message": "..."}` acknowledgements. */
export const messageAnswer = z.looseObject({ message: z.string() });
