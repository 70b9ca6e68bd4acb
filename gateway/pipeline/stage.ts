/**
 * A stage is a named function over the RequestContext that either lets the
 * request continue or declares it handled (httpxy's `true` halts). Errors
 * are thrown as ApiError and caught once by the runner (hono compose).
 */
import type { RequestContext } from '../http/context.ts';

export type StageResult = 'continue' | 'done';

/**
 * Whether a value a stage got from a domain (a principal, a handler's reply) is still to come. Any thenable, as
 * `await` would take it, not only a native promise: a value with a `then` must never be used as the answer itself.
 */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

export interface Stage {
  readonly name: StageName;
  run(ctx: RequestContext): Promise<StageResult> | StageResult;
}

/**
 * The ingress order, asserted by tests and quoted
 * in ARCHITECTURE.md. The first five run for every request; the rest are
 * compiled per route, leaving out what a route does not use.
 */
export const STAGE_ORDER = [
  'requestId',
  'accessLog',
  'limits',
  'canonicalPath',
  'routeMatch',
  'meshVerify',
  'authenticate',
  'authorize',
  'dispatch',
] as const;

export type StageName = (typeof STAGE_ORDER)[number];
