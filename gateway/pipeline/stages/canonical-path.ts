/**
 * canonicalPath: refuse paths whose meaning a backend might read differently
 * from us: dot segments (raw or %2e-encoded), empty segments
 * (`//`), backslashes, control characters, malformed escapes, absolute-form
 * targets. An encoded slash is only noted here; routeMatch admits it on URN
 * routes alone.
 */
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import { problemWithPath } from '../../http/path-problem.ts';
import type { Stage } from '../stage.ts';

export function createCanonicalPathStage(): Stage {
  return {
    name: 'canonicalPath',
    run(ctx: RequestContext) {
      const problem = problemWithPath(ctx.rawPath);
      if (problem) throw GatewayErrors.make.non_canonical_path({ problem });
      ctx.hasEncodedSlash = ctx.rawPath.includes('%') && /%2f/i.test(ctx.rawPath);
      return 'continue';
    },
  };
}
