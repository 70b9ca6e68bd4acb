/**
 * What makes a request path non-canonical, where a backend might read it differently from the gateway (RFC 3986
 * §5.2.4 dot segments, raw or %2e-encoded), empty segments (`//`), backslashes, control characters, malformed
 * escapes, absolute-form targets. The canonicalPath stage refuses such paths; redirect targets and routing prefixes
 * are held to the same rule.
 */
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
