/** Request plumbing shared by the catalog's route files: principals, URN addressing forms, query flags. */
import { z } from 'zod';
import { parseQuery } from '../../gateway/http/body.ts';
import type { RequestContext } from '../../gateway/http/context.ts';

/** The raw (undecoded) path after a static v2 prefix such as `/catalog/datasets/v2/`. */
export function rawTail(ctx: RequestContext, prefix: string): string {
  if (!ctx.rest.startsWith(prefix)) throw new Error(`catalog: ${prefix} route matched ${ctx.rest}`);
  return ctx.rest.slice(prefix.length);
}

/** A URN in a query string: the request head (16 KiB by default) has to hold it, so it is shorter than a path URN. */
const urn = z.string().min(1).max(8192);

/** `?urn=` of the by-urn forms (or another name). `+` in a query means a space: clients send `%2B`. */
export const urnQuery = <N extends string>(name: N) => z.object({ [name]: urn } as Record<N, typeof urn>);
/** `clobber=true|false` as the SDK sends it; absent means false. */
export const flagQuery = <N extends string>(name: N) =>
  z.object({ [name]: z.enum(['true', 'false', '1', '0']).optional() });
export const textQuery = <N extends string>(name: N) => z.object({ [name]: z.string().max(1024).optional() });

export function urnFromQuery(ctx: RequestContext, name = 'urn'): string {
  return (parseQuery(ctx.query, urnQuery(name)) as Record<string, string>)[name] as string;
}

export function flagFromQuery(ctx: RequestContext, name: string): boolean {
  const value = (parseQuery(ctx.query, flagQuery(name)) as Record<string, string | undefined>)[name];
  return value === 'true' || value === '1';
}

export function textFromQuery(ctx: RequestContext, name: string): string | undefined {
  return (parseQuery(ctx.query, textQuery(name)) as Record<string, string | undefined>)[name];
}

/** The JSON string answer of a create: the new URN. */
export const urnAnswer = z.string();

/** 201 with the URN as a JSON string body (the SDK uses `str(response)`). */
export const created = (value: string) => ({ status: 201, body: value });
export const noContent = () => ({ status: 204 });
export const ok = (body: unknown) => ({ status: 200, body });
