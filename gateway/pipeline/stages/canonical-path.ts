/**
 * canonicalPath: refuse paths whose meaning a backend might read differently
 * from us: dot segments (raw or %2e-encoded), empty segments
 * (`//`), backslashes, control characters, malformed escapes, absolute-form
 * targets. An encoded slash is only noted here; routeMatch admits it on URN
 * routes alone.
 */
import { GatewayErrors } from '../../errors/gateway-errors.ts';
import type { RequestContext } from '../../http/context.ts';
import type { Stage } from '../stage.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what we refuse.
const FORBIDDEN = /[\\\u0000-\u001f\u007f]|%5c|%00|%0[0-9a-f]|%1[0-9a-f]|%7f/i;
/** A `.` or `..` segment, for paths without escapes (the common case: no per-segment decoding). */
const RAW_DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

export function problemWithPath(rawPath: string): string | null {
  if (!rawPath.startsWith('/')) return 'not_origin_form';
  if (rawPath.includes('//')) return 'empty_segment';
  if (FORBIDDEN.test(rawPath)) return 'forbidden_character';
  if (!rawPath.includes('%')) return RAW_DOT_SEGMENT.test(rawPath) ? 'dot_segment' : null;
  let decoded: string[];
  try {
    decoded = rawPath.split('/').map((segment) => decodeURIComponent(segment));
  } catch {
    return 'bad_percent_encoding';
  }
  if (decoded.some((segment) => segment === '.' || segment === '..')) return 'dot_segment';
  return null;
}

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
