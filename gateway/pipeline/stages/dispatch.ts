/** dispatch: call the handler; a returned Reply is written, undefined means the handler streamed its own. */
import type { RequestContext } from '../../http/context.ts';
import { sendReply } from '../../http/respond.ts';
import type { RouteDef } from '../../module.ts';
import type { Stage, StageResult } from '../stage.ts';

export function createDispatchStage(handle: RouteDef['handle']): Stage {
  return {
    name: 'dispatch',
    async run(ctx: RequestContext): Promise<StageResult> {
      const reply = await handle(ctx);
      if (reply) sendReply(ctx.res, reply);
      return 'done';
    },
  };
}
