/** requestId: keep a sane inbound X-Request-Id (for tracing across proxies), else mint one; echo it. */
import type { RequestContext } from '../../http/context.ts';
import { RequestIdResponse } from '../../http/response.ts';
import type { Stage } from '../stage.ts';

const SANE_ID = /^[A-Za-z0-9._-]{8,64}$/;

export function createRequestIdStage(): Stage {
  return {
    name: 'requestId',
    run(ctx: RequestContext) {
      const inbound = ctx.req.headers['x-request-id'];
      if (typeof inbound === 'string' && SANE_ID.test(inbound)) (ctx as { requestId: string }).requestId = inbound;
      // The listeners' HTTP/1.1 responses write it into the head themselves (http/response.ts); HTTP/2's take it here.
      if (ctx.res instanceof RequestIdResponse) ctx.res.requestId = ctx.requestId;
      else ctx.res.setHeader('x-request-id', ctx.requestId);
      return 'continue';
    },
  };
}
