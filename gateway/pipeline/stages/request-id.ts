/** requestId: keep a sane inbound X-Request-Id (for tracing across proxies), else mint one; echo it. */
import type { RequestContext } from '../../http/context.ts';
import type { Stage } from '../stage.ts';

const SANE_ID = /^[A-Za-z0-9._-]{8,64}$/;

export function createRequestIdStage(): Stage {
  return {
    name: 'requestId',
    run(ctx: RequestContext) {
      const inbound = ctx.req.headers['x-request-id'];
      if (typeof inbound === 'string' && SANE_ID.test(inbound)) (ctx as { requestId: string }).requestId = inbound;
      ctx.res.setHeader('x-request-id', ctx.requestId);
      return 'continue';
    },
  };
}
