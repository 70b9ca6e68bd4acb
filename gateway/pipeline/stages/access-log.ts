/**
 * accessLog: one structured line per finished request. The query string is
 * never logged: it can carry credentials (`/api/auth/refresh?refresh_token=`).
 */
import type { RequestContext } from '../../http/context.ts';
import type { Stage } from '../stage.ts';

export function createAccessLogStage(): Stage {
  return {
    name: 'accessLog',
    run(ctx: RequestContext) {
      ctx.res.once('close', () => {
        ctx.logger.info(
          {
            req_id: ctx.requestId,
            method: ctx.method,
            path: ctx.rawPath,
            status: ctx.res.statusCode,
            service: ctx.service,
            user: ctx.principal?.userId,
            source: ctx.principal?.source,
            ms: Number(process.hrtime.bigint() - ctx.startedAt) / 1e6,
            aborted: !ctx.res.writableFinished,
          },
          'request',
        );
      });
      return 'continue';
    },
  };
}
