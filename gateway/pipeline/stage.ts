/**
 * A stage is a named function over the RequestContext that either lets the
 * request continue or declares it handled (httpxy's `true` halts). Errors
 * are thrown as ApiError and caught once by the runner (hono compose).
 */
import type { RequestContext } from '../http/context.ts';

export type StageResult = 'continue' | 'done';

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
