/**
 * The OpenAPI 3.1 document of the API routes, built from the route definitions themselves: each
 * route's zod schemas become JSON Schema 2020-12 (the dialect OpenAPI 3.1 adopts), and its
 * refusals are its declared reasons plus those the kernel gives on its behalf, each answered
 * with the body shape the error writer really sends (gateway/errors/api-error.ts).
 */
import { z } from 'zod';
import type { RegistryEntry } from '../errors/registry.ts';
import { SESSION_COOKIE } from '../http/session-cookie.ts';
import { MESH_INGRESS_REASONS, SHARED_REALM_REASONS } from '../mesh/errors.ts';
import type { HttpMethod, RouteDef } from '../module.ts';
import { errorResponses, type SharedResponses } from './error-responses.ts';

export type JsonSchema = Record<string, unknown>;

export interface DocumentSources {
  readonly routes: readonly RouteDef[];
  readonly registry: ReadonlyMap<string, RegistryEntry>;
  /** Where the routes are served (the live `api` prefix): the document's one server. */
  readonly apiPrefix: string;
  readonly version: string;
}

const WRITES: ReadonlySet<HttpMethod> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Every request may meet these before or after its route runs (canonicalPath, limits, the error writer). */
const ANY_ROUTE = ['non_canonical_path', 'headers_too_large', 'internal_error'];

/** Named schemas shared by the operations: the `$defs` zod emits for recursive shapes, moved to components. */
export type SharedSchemas = Map<string, JsonSchema>;

/**
 * A zod schema as JSON Schema: requests as a client sends them (before coercion and defaults), answers as
 * sent; unrepresentable parts accept anything. `$ref`s into local `$defs` would resolve against the whole
 * document in OpenAPI, so the definitions move to `components.schemas` under names unique to this build.
 */
export function toSchema(schema: z.ZodType, io: 'input' | 'output', shared: SharedSchemas): JsonSchema {
  const { $schema: _dialect, $defs, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  if (!$defs) return rest;
  const prefix = `S${shared.size}_`;
  const rewrite = (value: unknown) =>
    JSON.parse(JSON.stringify(value).replaceAll('"#/$defs/', `"#/components/schemas/${prefix}`));
  for (const [name, def] of Object.entries($defs as Record<string, JsonSchema>))
    shared.set(`${prefix}${name}`, rewrite(def));
  return rewrite(rest);
}

/** Every reason the route may answer with: its own, then those its auth mode, inputs and method imply. */
export function reasonsOf(def: RouteDef, method: HttpMethod): string[] {
  const { doc } = def;
  const reasons = [...ANY_ROUTE, ...(doc.errors ?? [])];
  if (def.auth !== 'none') reasons.push('not_authenticated', ...MESH_INGRESS_REASONS);
  // A cross-origin session cookie is refused where a credential is required, and ignored where it is optional.
  if (def.auth === 'user' || def.auth === 'admin') reasons.push('cross_origin_session');
  if (def.acceptSharedRealm) reasons.push(...SHARED_REALM_REASONS);
  if (def.auth === 'admin' || def.nativeOnly) reasons.push('endpoint_requires_native_realm');
  if (def.auth === 'admin') reasons.push('admin_required');
  if (doc.body || doc.form) reasons.push('body_too_large');
  if (doc.form) reasons.push('unsupported_media_type');
  if (doc.body || doc.form || doc.query || doc.params) reasons.push('request_validation_failed');
  if (WRITES.has(method)) reasons.push('storage_full');
  return [...new Set(reasons)];
}

/** `/cluster/jobs/:job_id/status` → `/cluster/jobs/{job_id}/status`; a final `*urn` is the `{urn}` rest. */
export function templatePath(path: string): string {
  return path.replace(/\/[:*]([A-Za-z_][A-Za-z0-9_]*)/g, '/{$1}');
}

function pathParameters(def: RouteDef, shared: SharedSchemas): JsonSchema[] {
  const declared = def.doc.params
    ? (toSchema(def.doc.params, 'input', shared).properties as Record<string, JsonSchema>)
    : {};
  return [...def.path.matchAll(/\/([:*])([A-Za-z_][A-Za-z0-9_]*)/g)].map(([, kind, name]) => ({
    name,
    in: 'path',
    required: true,
    ...(kind === '*' ? { description: 'The rest of the path; may hold `/` (raw or as %2F).' } : {}),
    schema: declared[name as string] ?? { type: 'string', minLength: 1 },
  }));
}

function queryParameters(query: z.ZodObject | undefined, shared: SharedSchemas): JsonSchema[] {
  if (!query) return [];
  const schema = toSchema(query, 'input', shared);
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>).map(([name, property]) => ({
    name,
    in: 'query',
    required: required.has(name),
    schema: property,
  }));
}

function requestBody(def: RouteDef, shared: SharedSchemas): JsonSchema | undefined {
  const { body, form } = def.doc;
  if (form)
    return {
      required: true,
      content: { 'application/x-www-form-urlencoded': { schema: toSchema(form, 'input', shared) } },
    };
  if (!body) return undefined;
  // readJson hands an empty body to the schema as `undefined`: the body is optional exactly when that parses.
  return {
    required: !body.safeParse(undefined).success,
    content: { 'application/json': { schema: toSchema(body, 'input', shared) } },
  };
}

function successResponses(def: RouteDef, shared: SharedSchemas): Record<string, JsonSchema> {
  const media = def.doc.answerMedia ?? 'application/json';
  return Object.fromEntries(
    Object.entries(def.doc.answers).map(([status, schema]) => [
      status,
      schema === null
        ? { description: 'No body.' }
        : { description: def.doc.summary, content: { [media]: { schema: toSchema(schema, 'output', shared) } } },
    ]),
  );
}

/** A bearer token, or the session cookie (accepted on API routes only from the gateway's own origin). */
function security(def: RouteDef): JsonSchema[] {
  if (def.auth === 'none') return [];
  const credentials = [{ bearer: [] }, { session: [] }];
  return def.auth === 'optional' ? [{}, ...credentials] : credentials;
}

/** `get` `/cluster/jobs/:job_id/status` → `getClusterJobsJobIdStatus`: the method, then the path in camel case. */
export function operationIdOf(method: HttpMethod, path: string): string {
  const camel = (_: string, c: string | undefined) => (c ?? '').toUpperCase();
  return `${method.toLowerCase()}${templatePath(path).replace(/[^A-Za-z0-9]+(.)?/g, camel)}`;
}

/**
 * The `METHOD path` keys of trailing-slash twins: a collection served both as `/x` and `/x/` (the interface names
 * the bare path, the public client appends the slash as its FastAPI-era server expected) is one operation, not two.
 * A client generator makes one method per operation, so a twin documented beside it would give every client a
 * second method doing the same thing — and it would share the operationId the path yields, which OpenAPI 3.1's
 * Operation Object forbids (unique among all operations). The bare path is documented; its description names the twin.
 */
export function slashTwins(routes: readonly RouteDef[]): ReadonlySet<string> {
  const served = new Set(routes.flatMap((def) => methodsOf(def).map((method) => `${method} ${def.path}`)));
  return new Set([...served].filter((key) => key.endsWith('/') && served.has(key.slice(0, -1))));
}

const methodsOf = (def: RouteDef): readonly HttpMethod[] =>
  typeof def.method === 'string' ? [def.method] : def.method;

function operation(
  def: RouteDef,
  method: HttpMethod,
  registry: DocumentSources['registry'],
  shared: SharedSchemas,
  twin: string | undefined,
  refusals: SharedResponses,
): JsonSchema {
  const tag = def.path.split('/')[1] || 'api';
  const parameters = [...pathParameters(def, shared), ...queryParameters(def.doc.query, shared)];
  const body = requestBody(def, shared);
  return {
    operationId: operationIdOf(method, def.path),
    summary: def.doc.summary,
    ...(twin ? { description: `Also answered, the same, at \`${twin}\`.` } : {}),
    tags: [tag],
    security: security(def),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses: { ...successResponses(def, shared), ...errorResponses(reasonsOf(def, method), registry, refusals) },
  };
}

/** The `paths` object: one operation per documented method, each with an operationId unique in the document. */
function pathItems(
  routes: readonly RouteDef[],
  registry: DocumentSources['registry'],
  shared: SharedSchemas,
  refusals: SharedResponses,
): Record<string, Record<string, JsonSchema>> {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  const twins = slashTwins(routes);
  const operationIds = new Set<string>();
  const documented = routes
    .flatMap((def) => methodsOf(def).map((method) => ({ def, method })))
    .filter(({ def, method }) => !twins.has(`${method} ${def.path}`));
  for (const { def, method } of documented) {
    const item = paths[templatePath(def.path)] ?? {};
    paths[templatePath(def.path)] = item;
    const key = method.toLowerCase();
    if (item[key]) throw new Error(`the API document has two ${method} ${def.path} operations`);
    const twin = twins.has(`${method} ${def.path}/`) ? `${def.path}/` : undefined;
    const op = operation(def, method, registry, shared, twin, refusals);
    const id = op.operationId as string;
    if (operationIds.has(id)) throw new Error(`the API document has two operations named ${id}`);
    operationIds.add(id);
    item[key] = op;
  }
  return Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
}

export function buildOpenApiDocument({ routes, registry, apiPrefix, version }: DocumentSources): JsonSchema {
  const shared: SharedSchemas = new Map();
  const refusals: SharedResponses = new Map();
  const paths = pathItems(routes, registry, shared, refusals);
  return {
    openapi: '3.1.0',
    info: {
      title: 'meshgate API',
      version,
      description:
        'Every refusal carries a stable `reason`; the reasons are listed under ' +
        '`components.schemas.ErrorReason`. HEAD is answered wherever GET is.',
    },
    servers: [{ url: apiPrefix }],
    paths,
    components: {
      responses: Object.fromEntries([...refusals].sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'A native access token (JWT) or a personal access token.',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description:
            "The sign-in session; on API routes only from the gateway's own origin " +
            '(`Origin`, or `Sec-Fetch-Site: same-origin`).',
        },
      },
      schemas: {
        ...Object.fromEntries(shared),
        ErrorReason: {
          oneOf: [...registry.values()].map((entry) => ({
            const: entry.reason,
            description: `${entry.status} (${entry.domain}): ${entry.doc}`,
          })),
        },
      },
    },
  };
}
