/**
 * One `close` listener a request for everything that waits for its response to close: the access line and the
 * request's span (pipeline/stages/access-log.ts), then, in the order they were added, the hooks of the parts that
 * took the request on (the proxy's exchange, the open-streams list). A listener each cost a closure each, the
 * emitter's listener array grown on every `on` and copied on every emit (bench/README.md, proxy); a hook is an
 * object the part holds anyway, told through a method.
 */
import type { RequestContext } from './context.ts';

/** What the response's close tells: its client is gone or its answer is over. */
export interface CloseHook {
  responseClosed(): void;
}

/** Adds `hook` to what the request's close listener runs, listening first if nothing does yet. */
export function onResponseClose(ctx: RequestContext, hook: CloseHook): void {
  if (!ctx.closeHooks) ctx.closeHooks = [hook];
  else ctx.closeHooks.push(hook);
  if (!ctx.closeWatched) watchResponseClose(ctx, () => runCloseHooks(ctx));
}

/** The request's one close listener (`listener` ends with runCloseHooks); hooks join it with onResponseClose. */
export function watchResponseClose(ctx: RequestContext, listener: () => void): void {
  ctx.closeWatched = true;
  // `on`, not `once`: a response closes once, and a once wrapper is one more allocation and removal a request.
  ctx.res.on('close', listener);
}

/** The hooks added so far, in order. */
export function runCloseHooks(ctx: RequestContext): void {
  const hooks = ctx.closeHooks;
  if (!hooks) return;
  for (let i = 0; i < hooks.length; i++) (hooks[i] as CloseHook).responseClosed();
}
