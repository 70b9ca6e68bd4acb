/**
 * dispatch: call the handler; a returned Reply is written, undefined means the handler streamed its own. On an
 * upgrade's chain it hands the connection to the mount's upgrade hook instead, which answers it (the 101) or rejects
 * before writing anything, so the runner answers the refusal.
 */
import type { Reply, RequestContext } from '../../http/context.ts';
import { sendReply } from '../../http/respond.ts';
import type { RouteDef, UpgradeHook } from '../../module.ts';
import { isThenable, type Stage, type StageResult } from '../stage.ts';

export function createDispatchStage(handle: RouteDef['handle']): Stage {
  const written = (ctx: RequestContext, reply: Reply | undefined): StageResult => {
    if (reply) sendReply(ctx.res, reply);
    return 'done';
  };
  return {
    name: 'dispatch',
    // A handler that answers synchronously costs no promise; one that returns a promise is awaited by the runner.
    run(ctx: RequestContext): StageResult | Promise<StageResult> {
      const reply = handle(ctx);
      return isThenable(reply) ? Promise.resolve(reply).then((r) => written(ctx, r)) : written(ctx, reply);
    },
  };
}

export function createUpgradeStage(upgrade: UpgradeHook): Stage {
  return {
    name: 'dispatch',
    async run(ctx: RequestContext): Promise<StageResult> {
      const { socket, head } = ctx.upgrade as NonNullable<RequestContext['upgrade']>;
      await upgrade(ctx, socket, head);
      return 'done';
    },
  };
}
