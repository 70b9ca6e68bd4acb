/**
 * limits: header count and total header size (431). Body size is enforced
 * while reading (gateway/http/body.ts, 413); the node parser enforces its
 * own hard cap before we run, and the server carries the timeouts.
 */
import type { Config } from '../../config/schema.ts';
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import type { Stage } from '../stage.ts';

export function createLimitsStage(limits: Config['limits']): Stage {
  const { maxHeaderCount, maxHeaderBytes } = limits;
  return {
    name: 'limits',
    run(ctx: RequestContext) {
      const raw = ctx.req.rawHeaders;
      if (raw.length / 2 > maxHeaderCount) throw GatewayErrors.make.headers_too_large({ max_headers: maxHeaderCount });
      let bytes = 0;
      for (const part of raw) bytes += part.length + 2;
      if (bytes > maxHeaderBytes) throw GatewayErrors.make.headers_too_large({ max_header_bytes: maxHeaderBytes });
      return 'continue';
    },
  };
}
