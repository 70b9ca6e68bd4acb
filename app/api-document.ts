/**
 * `/api/openapi.json` and `/api/docs`: the API document of every route the domains serve (and of
 * these two), and the page that renders it. The document is built on first request, then again
 * only when the `api` prefix moves, so start-up pays nothing for it.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import type { RegistryEntry } from '../gateway/errors/registry.ts';
import type { RequestContext } from '../gateway/http/context.ts';
import type { HandlerInstance, RouteDef } from '../gateway/module.ts';
import { buildOpenApiDocument, type JsonSchema } from '../gateway/openapi/document.ts';
import { REFERENCE_PAGE, REFERENCE_PAGE_HEADERS } from '../gateway/openapi/reference-page.ts';
import type { RoutingSource } from '../gateway/routing/source.ts';
import packageJson from '../package.json' with { type: 'json' };

/** The document's own shape, as far as a client relies on it. */
const openApiShape = z.looseObject({
  openapi: z.string(),
  info: z.looseObject({}),
  paths: z.record(z.string(), z.unknown()),
});

export function apiDocumentInstance(
  domains: readonly HandlerInstance[],
  registry: ReadonlyMap<string, RegistryEntry>,
  routing: RoutingSource,
): HandlerInstance {
  let cached: { prefix: string; document: JsonSchema } | null = null;
  const routes: RouteDef[] = [
    {
      method: 'GET',
      path: '/openapi.json',
      auth: 'none',
      doc: {
        summary: 'This document: every API route, its inputs, answers and refusal reasons',
        answers: { 200: openApiShape },
      },
      handle() {
        const prefix = routing.current().prefixes.api ?? '/api';
        if (cached?.prefix !== prefix) {
          const all = [...domains.flatMap((d) => d.routes ?? []), ...routes];
          cached = {
            prefix,
            document: buildOpenApiDocument({ routes: all, registry, apiPrefix: prefix, version: packageJson.version }),
          };
        }
        return { status: 200, body: cached.document, headers: { 'cache-control': 'no-cache' } };
      },
    },
    {
      method: 'GET',
      path: '/docs',
      auth: 'none',
      doc: {
        summary: 'The API reference page (renders openapi.json; no external resources)',
        answers: { 200: z.string() },
        answerMedia: 'text/html',
      },
      handle(ctx: RequestContext) {
        // Http2ServerResponse has the same writeHead/end shape; the union's overloads just do not unify.
        const res = ctx.res as ServerResponse;
        res.writeHead(200, { ...REFERENCE_PAGE_HEADERS, 'content-length': Buffer.byteLength(REFERENCE_PAGE) });
        res.end(REFERENCE_PAGE);
        return undefined;
      },
    },
  ];
  return { routes };
}
