/**
 * A stage is a named function over the RequestContext that either lets the
 * request continue or declares it handled (httpxy's `true` halts). Errors
 * are thrown as ApiError and caught once by the runner (hono compose).
 * Which stages a chain holds, and in what order, is the plan's (plan.ts).
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
  /** Its entry's name in the plan (plan.ts), which the plan's test checks. */
  readonly name: string;
  run(ctx: RequestContext): Promise<StageResult> | StageResult;
}
