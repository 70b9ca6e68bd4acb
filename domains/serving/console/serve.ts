/**
 * The operator console at the frontend prefix: `/console/` always, and the
 * frontend root itself when no frontend upstream takes it. The shell is a
 * static page with no inline script or style, so its Content-Security-Policy
 * allows only this origin's files (CSP Level 3: `default-src 'self'`); the
 * console then reads and changes everything through the public API, signed
 * in by the session cookie the /login page set.
 */
import type { ServerResponse } from 'node:http';
import { GatewayErrors } from '../../../gateway/errors/gateway-errors.ts';
import type { NodeResponse, RequestContext } from '../../../gateway/http/context.ts';
import { escapeHtml, type HomeInfo, homeSummary } from '../pages.ts';
import { type ConsoleAsset, ConsoleAssets, type ConsoleBundle } from './assets.ts';

export const CONSOLE_PATH = '/console';

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

const SHELL_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'content-security-policy': CSP,
};

/** A hashed name changes with the content, so a copy may be kept as long as caches allow (RFC 8246 `immutable`). */
const ASSET_CACHE = 'public, max-age=31536000, immutable';

export interface ConsoleInfo {
  home: () => HomeInfo;
  /** Whether a frontend upstream owns the frontend root (the console then lives only under /console/). */
  upstreamOwnsRoot: boolean;
}

function shell(bundle: ConsoleBundle, base: string, info: HomeInfo): string {
  const assets = `${base}${CONSOLE_PATH}/assets`;
  return (
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info.clusterName)} · meshgate console</title>
<link rel="stylesheet" href="${assets}/${bundle.style.name}">
<script type="module" src="${assets}/${bundle.script.name}"></script>
</head><body>
<div id="app" ` +
    `data-cluster="${escapeHtml(info.clusterName)}" ` +
    `data-api="${escapeHtml(info.prefixes.api ?? '/api')}" ` +
    `data-base="${escapeHtml(`${base}${CONSOLE_PATH}/`)}">
${homeSummary(info)}
</div>
</body></html>
`
  );
}

function send(
  response: NodeResponse,
  status: number,
  headers: Record<string, string | number>,
  body: Buffer | string,
  head: boolean,
): undefined {
  const res = response as ServerResponse;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  res.writeHead(status, { ...headers, 'content-length': bytes.length });
  res.end(head ? undefined : bytes);
  return undefined;
}

function sendAsset(ctx: RequestContext, asset: ConsoleAsset): undefined {
  const gzip = /\bgzip\b/.test(String(ctx.req.headers['accept-encoding'] ?? ''));
  const headers = {
    'content-type': asset.type,
    'cache-control': ASSET_CACHE,
    'x-content-type-options': 'nosniff',
    vary: 'accept-encoding',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  };
  return send(ctx.res, 200, headers, gzip ? asset.gzip : asset.body, ctx.method === 'HEAD');
}

/** Serves the console's pages and assets; `null` for any request that is not the console's. */
export function consoleHandler(info: ConsoleInfo) {
  const assets = new ConsoleAssets();
  return (ctx: RequestContext): Promise<undefined> | null => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return null;
    const { rest } = ctx;
    const atRoot = rest === '/' && !info.upstreamOwnsRoot;
    if (!atRoot && rest !== CONSOLE_PATH && !rest.startsWith(`${CONSOLE_PATH}/`)) return null;
    // The frontend prefix ('' when it is `/`), so asset links work under any prefix.
    const base = ctx.rawPath.endsWith(rest) ? ctx.rawPath.slice(0, ctx.rawPath.length - rest.length) : '';
    return assets.bundle().then((bundle) => {
      const assetPrefix = `${CONSOLE_PATH}/assets/`;
      if (rest.startsWith(assetPrefix)) {
        const asset = bundle.byName.get(rest.slice(assetPrefix.length));
        if (!asset) throw GatewayErrors.make.route_not_found();
        return sendAsset(ctx, asset);
      }
      // Every other console path is the shell: the client reads its page from the URL's fragment.
      return send(ctx.res, 200, SHELL_HEADERS, shell(bundle, base, info.home()), ctx.method === 'HEAD');
    });
  };
}
