/**
 * Mesh egress `{METHOD} /api/mesh/{selector}/{remote_path}`: resolve the selector among PAIRED
 * records, rebuild the header set (credentials and any client-sent mesh or
 * identity header removed, the envelope regenerated), extend the route
 * trace, and stream the request to the peer through its signing dispatcher
 * and the answer back unchanged: status, headers, body, redirects and peer
 * errors alike, SSE included, never buffered. The core (`createMeshEgress`)
 * is also provided in process as MESH_EGRESS, so a domain can send a mesh
 * request as its caller without a second signer or selector (the jobs
 * compatibility shim).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { type Dispatcher, request } from 'undici';
import { z } from 'zod';
import type { Config } from '../../gateway/config/schema.ts';
import { ApiError } from '../../gateway/errors/api-error.ts';
import { readBody } from '../../gateway/http/body.ts';
import type { MeshInbound, NodeRequest, RequestContext } from '../../gateway/http/context.ts';
import { hasBody } from '../../gateway/mesh/body-guard.ts';
import { unixSeconds } from '../../gateway/mesh/canonical.ts';
import type { MeshDirectory, MeshPeer } from '../../gateway/mesh/directory.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import {
  forwardableRequestHeaders,
  forwardableResponseHeaders,
  MAX_HOPS,
  MESH,
  remoteUri,
} from '../../gateway/mesh/headers.ts';
import { MESH_SIGNATURES } from '../../gateway/mesh/metrics.ts';
import type { HttpMethod, RouteDef } from '../../gateway/module.ts';
import type { MetricsRegistry } from '../../gateway/observability/metrics.ts';
import { NO_SPAN, type Span, SpanKind, type Tracing } from '../../gateway/observability/tracing.ts';
import type { Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { composeMeshDispatcher, upstreamError } from './dispatcher.ts';
import { resolveSelector } from './selector.ts';

const METHODS: readonly HttpMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface EgressDeps {
  directory: MeshDirectory;
  config: Readonly<Config>;
  metrics: MetricsRegistry;
  tracing: Tracing;
  now(): Date;
}

/** The mesh identity headers for the caller, before signing. */
export function identityHeaders(principal: Principal, bearer: string | null): Record<string, string> {
  const headers: Record<string, string> = {
    [MESH.userId]: principal.userId,
    [MESH.userRoles]: principal.roles.join(','),
  };
  if (bearer) headers[MESH.peerToken] = bearer;
  if (Object.keys(principal.attributes).length > 0) headers[MESH.userAttributes] = JSON.stringify(principal.attributes);
  return headers;
}

/** The trace this hop sends: the inbound one (verified hops only) plus this cluster; 508 on a loop or past 8 hops. */
export function extendRoute(inbound: readonly string[], localId: string): string[] {
  const self = localId.toLowerCase();
  if (inbound.includes(self) || inbound.length + 1 > MAX_HOPS) {
    throw MeshErrors.make.mesh_hop_limit_exceeded({ hops: inbound.length + 1, max_hops: MAX_HOPS });
  }
  return [...inbound, self];
}

/** One mesh request, from the egress route or from a domain acting for its caller. */
export interface MeshCall {
  principal: Principal;
  /** The caller's credential; it travels as X-KZ-Mesh-Peer-Token, never as Authorization. */
  bearer: string | null;
  selector: string;
  method: HttpMethod;
  /**
   * The remote path after the selector, still percent-encoded; `/api` is
   * prepended unless it starts with `api/` or `runtime/`.
   */
  remotePath: string;
  /** `?…` as received, or ''; forwarded, not signed. */
  query: string;
  /** Client headers allowed across the hop (forwardableRequestHeaders). */
  headers: Record<string, string>;
  body?: Buffer | NodeRequest | undefined;
  /** The verified inbound hop when this cluster is itself a mesh hop: its route trace and correlation id. */
  inbound: MeshInbound | null;
  /** A client-chosen correlation id (kept when it is a UUID and there is no inbound one). */
  correlationId?: string | undefined;
  signal?: AbortSignal | undefined;
  /** The caller's span: the hop's span is its child, and the peer continues the trace from the hop. */
  span?: Span | undefined;
}

export interface MeshAnswer {
  peer: MeshPeer;
  correlationId: string;
  /** The peer's answer, body unread: the caller streams or reads it. */
  response: Dispatcher.ResponseData;
}

/** One resolved hop: the peer, its signing dispatcher and origin, the extended route trace. */
interface Hop {
  peer: MeshPeer;
  route: readonly string[];
  origin: string;
  dispatcher: Dispatcher;
  correlationId: string;
  local: string;
}

export interface MeshEgress {
  /** Resolves, signs and sends; transport failures throw the mesh reasons (502/504/508, selector 4xx). */
  send(call: MeshCall): Promise<MeshAnswer>;
}

/** The egress core for domains (provided by domains/mesh next to MESH_DIRECTORY). */
export const MESH_EGRESS = createServiceKey<MeshEgress>('mesh-egress');

export function createMeshEgress(deps: EgressDeps): MeshEgress {
  const deadlines = {
    apiMs: deps.config.mesh.proxyReadTimeoutSeconds * 1000,
    runtimeMs: deps.config.mesh.runtimeReadTimeoutSeconds * 1000,
  };
  // Keyed by the peer's pool: a pool the federation domain released (its record left PAIRED) takes its signer along.
  const dispatchers = new WeakMap<Dispatcher, Dispatcher>();
  const signatures = deps.metrics.counter(MESH_SIGNATURES);

  /** One signing dispatcher per peer, rebuilt when the federation hands out a new agent (new CA or route). */
  function dispatcherFor(peer: MeshPeer): { origin: string; dispatcher: Dispatcher } {
    const peerAgent = deps.directory.agent(peer);
    const key = deps.directory.key(peer);
    if (!peerAgent || !key) {
      signatures.labels('sign', peer.id, 'peer_not_reachable_unpaired').inc();
      throw MeshErrors.make.mesh_proxy_bad_gateway({ layer: 'tls', cause: 'peer_not_reachable_unpaired' });
    }
    let dispatcher = dispatchers.get(peerAgent.agent);
    if (!dispatcher) {
      const sign = { key, features: new Set(peer.features), nowSeconds: () => unixSeconds(deps.now()) };
      dispatcher = composeMeshDispatcher(peerAgent.agent, sign, deadlines);
      dispatchers.set(peerAgent.agent, dispatcher);
    }
    return { origin: peerAgent.origin, dispatcher };
  }

  /** Hardened peers sign the body digest: a streamed body is read first (bounded), then sent with its length. */
  async function bodyFor(peer: MeshPeer, body: MeshCall['body']): Promise<MeshCall['body']> {
    if (body === undefined || Buffer.isBuffer(body) || !peer.features.includes('body-sha256')) return body;
    return readBody(body, deps.config.limits.maxBodyBytes);
  }

  async function send(call: MeshCall): Promise<MeshAnswer> {
    const local = { id: deps.directory.localClusterId(), name: deps.directory.localClusterName() };
    const peer = resolveSelector(call.selector, deps.directory.paired(), local);
    const route = extendRoute(call.inbound?.route ?? [], local.id);
    const { origin, dispatcher } = dispatcherFor(peer);
    signatures.labels('sign', peer.id, 'ok').inc();
    const correlationId = correlationOf(call);
    // The trace context is not signed: it only correlates, and the peer trusts nothing else from it.
    const hop = (span: Span) =>
      dispatch(call, { peer, route, origin, dispatcher, correlationId, local: local.id }, span);
    return deps.tracing.inSpan('mesh.hop', call.span ?? NO_SPAN, hop, SpanKind.CLIENT, { 'meshgate.peer': peer.id });
  }

  /** The hop itself: the header set (trace context, identity, envelope), the body, the signed request. */
  async function dispatch(call: MeshCall, hop: Hop, span: Span): Promise<MeshAnswer> {
    const { peer, correlationId } = hop;
    const headers: Record<string, string> = {
      ...call.headers,
      ...deps.tracing.headersFor(span),
      ...identityHeaders(call.principal, call.bearer),
      [MESH.sourceClusterId]: hop.local,
      [MESH.route]: hop.route.join(','),
      [MESH.correlationId]: correlationId,
    };
    // Names the peer's record, so a peer paired with us more than once verifies with this record's key.
    const named = peer.features.includes('federation-id') ? peer.remoteFederationId : null;
    if (named) headers[MESH.federationId] = named;
    const body = await bodyFor(peer, call.body);
    if (Buffer.isBuffer(body)) headers['content-length'] = String(body.length);
    try {
      const uri = `${hop.origin}${remoteUri(call.remotePath)}${call.query}`;
      const response = await request(uri, {
        method: call.method,
        headers,
        body,
        dispatcher: hop.dispatcher,
        signal: call.signal,
      });
      span.setAttribute('http.response.status_code', response.statusCode);
      return { peer, correlationId, response };
    } catch (error) {
      throw error instanceof ApiError ? error : upstreamError(error);
    }
  }

  return { send };
}

/** The inbound hop's correlation id, else the client's when it is a UUID, else a new one. */
function correlationOf(call: MeshCall): string {
  const inbound = call.inbound?.correlationId;
  if (inbound !== undefined && inbound !== null) return inbound;
  return call.correlationId && UUID.test(call.correlationId) ? call.correlationId : randomUUID();
}

export function createMeshEgressRoute(egress: MeshEgress): RouteDef {
  async function forward(ctx: RequestContext): Promise<undefined> {
    // ctx.rest is `/mesh/<selector>/<remote>`, still percent-encoded: the peer sees the caller's exact bytes.
    const afterMesh = ctx.rest.slice('/mesh/'.length);
    const url = ctx.req.url ?? '';
    const clientCorrelation = ctx.req.headers[MESH.correlationId];
    const abort = new AbortController();
    ctx.res.once('close', () => {
      if (!ctx.res.writableFinished) abort.abort();
    });
    const { peer, correlationId, response } = await egress.send({
      principal: ctx.principal as Principal,
      bearer: ctx.bearer,
      selector: ctx.params.selector ?? '',
      method: ctx.method as HttpMethod,
      remotePath: afterMesh.slice(afterMesh.indexOf('/') + 1),
      query: url.includes('?') ? url.slice(url.indexOf('?')) : '',
      headers: forwardableRequestHeaders(ctx.req.headers),
      body: hasBody(ctx.req) ? ctx.req : undefined,
      inbound: ctx.meshPeer,
      correlationId: typeof clientCorrelation === 'string' ? clientCorrelation : undefined,
      signal: abort.signal,
      span: ctx.span,
    });
    const res = ctx.res as ServerResponse;
    res.writeHead(response.statusCode, {
      ...forwardableResponseHeaders(response.headers),
      [MESH.correlationId]: correlationId,
    });
    try {
      await pipeline(response.body, res);
    } catch (error) {
      ctx.logger.warn(
        {
          req_id: ctx.requestId,
          federation_id: peer.id,
          err: error instanceof ApiError ? error.reason : String(error),
        },
        'mesh stream aborted',
      );
      res.destroy();
    }
    return undefined;
  }

  return {
    method: METHODS,
    path: '/mesh/:selector/*remote',
    auth: 'user',
    acceptSharedRealm: true,
    // The peer decides what its own paths may hold (URN routes take %2F).
    allowEncodedSlash: true,
    doc: {
      summary: "Call a paired cluster's API as the caller: `/api/{remote}` there, its answer streamed back as it is",
      // Whatever the peer answers (any status, any body) is relayed; these are the answers of this side.
      answers: { 200: z.unknown() },
      errors: [
        'mesh_target_not_found',
        'mesh_target_ambiguous',
        'mesh_target_is_local',
        'mesh_proxy_bad_gateway',
        'mesh_proxy_timeout',
        'mesh_hop_limit_exceeded',
        'body_too_large',
      ],
    },
    handle: forward,
  };
}
