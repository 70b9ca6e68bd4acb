/**
 * `/api/openapi.json` and `/api/docs`: the API document of every route the domains serve (and of
 * these two), and the page that renders it. Building the document (every zod schema converted) and
 * serializing it (about a megabyte) each block the event loop for tens of milliseconds, so neither
 * happens on a request: the serialized document is built once the process is idle after start (not
 * in a primary, which serves no API) and again when the `api` prefix moves, and a request only writes
 * those bytes. Start-up itself pays nothing; a request that comes before the idle build does it.
 */
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import type { RegistryEntry } from '../gateway/errors/registry.ts';
import type { RequestContext } from '../gateway/http/context.ts';
import type { HandlerInstance, RouteDef } from '../gateway/module.ts';
import { buildOpenApiDocument } from '../gateway/openapi/document.ts';
import { REFERENCE_PAGE, REFERENCE_PAGE_HEADERS } from '../gateway/openapi/reference-page.ts';
import type { ProcessPlace } from '../gateway/process/link.ts';
import type { RoutingSnapshot, RoutingSource } from '../gateway/routing/source.ts';
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
  place: ProcessPlace,
): HandlerInstance {
  let cached: { prefix: string; bytes: Buffer } | null = null;
  const prefixOf = (snapshot: RoutingSnapshot) => snapshot.prefixes.api ?? '/api';
  const serialized = (prefix: string): Buffer => {
    if (cached?.prefix !== prefix) {
      const all = [...domains.flatMap((d) => d.routes ?? []), ...routes];
      const document = buildOpenApiDocument({ routes: all, registry, apiPrefix: prefix, version: packageJson.version });
      cached = { prefix, bytes: Buffer.from(JSON.stringify(document)) };
    }
    return cached.bytes;
  };
  const routes: RouteDef[] = [
    {
      method: 'GET',
      path: '/openapi.json',
      auth: 'none',
      doc: {
        summary: 'This document: every API route, its inputs, answers and refusal reasons',
        answers: { 200: openApiShape },
      },
      handle(ctx: RequestContext) {
        const bytes = serialized(prefixOf(routing.current()));
        // Http2ServerResponse has the same writeHead/end shape; the union's overloads just do not unify.
        const res = ctx.res as ServerResponse;
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': bytes.length,
          'cache-control': 'no-cache',
        });
        res.end(bytes);
        return undefined;
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
  if (place.role !== 'primary') {
    const build = (prefix: string) =>
      setImmediate(() => {
        try {
          serialized(prefix);
        } catch {
          // A wiring bug (a route naming an unregistered reason) must not end the process: the request that
          // asks for the document builds it again and answers 500, logged there with the cause.
        }
      });
    build(prefixOf(routing.current()));
    routing.subscribe((snapshot) => build(prefixOf(snapshot)));
  }
  return { routes };
}
