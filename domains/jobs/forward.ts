/**
 * The forwarding shim for older clients (docs/jobs.md "Mesh jobs"): the develop SDK sends
 * `run(target_cluster="X")` to its LOCAL cluster and then polls locally.
 * A local submit or run naming another cluster is sent through this
 * cluster's own mesh egress (MESH_EGRESS: same selector, signer and
 * dispatcher as `/api/mesh/...`) as the caller, whose bearer token becomes
 * the peer token, to the peer's `/api/cluster/jobs/{submit|run}` with the
 * selector fields removed. The peer's answer comes back as is, plus
 * `cluster_selector` on success. A forwarded submit leaves a shadow
 * `{remote job_id → federation}` so local status/result/logs/cancel for
 * that id are proxied the same way.
 */

import { ApiError } from '../../gateway/errors/api-error.ts';
import type { MeshInbound, Reply } from '../../gateway/http/context.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import { MESH } from '../../gateway/mesh/headers.ts';
import type { HttpMethod } from '../../gateway/module.ts';
import type { Span } from '../../gateway/observability/tracing.ts';
import type { Principal } from '../../gateway/principal.ts';
import type { MeshAnswer, MeshEgress } from '../mesh/index.ts';
import type { ShadowStore } from './store.ts';

/** The per-job actions a shadow proxies. */
export type ShadowAction = 'status' | 'result' | 'logs' | 'cancel';

/** Who is forwarding: the principal, its credential, and the inbound hop when this cluster is itself a mesh hop. */
export interface Caller {
  principal: Principal;
  bearer: string | null;
  inbound: MeshInbound | null;
  /** The caller's span; a forwarded job continues its trace on the peer. */
  span: Span;
}

/** Far above any jobs answer (logs are capped at jobs.logsResponseMaxBytes before JSON escaping). */
const PEER_ANSWER_MAX_BYTES = 64 * 1024 * 1024;

/** The selector a submit or run names; `local` when it names none (target_cluster is an alias). */
export function targetOf(input: {
  cluster_selector?: string | null | undefined;
  target_cluster?: string | null | undefined;
}): string {
  return input.cluster_selector ?? input.target_cluster ?? 'local';
}

export class MeshJobForwarder {
  constructor(
    private readonly egress: MeshEgress,
    private readonly shadows: ShadowStore,
    private readonly now: () => Date,
  ) {}

  /** Forward through the mesh, answer the peer's body plus `cluster_selector`; shadow a submit the peer accepted. */
  async submission(
    caller: Caller,
    kind: 'submit' | 'run',
    selector: string,
    body: Record<string, unknown>,
  ): Promise<Reply> {
    const { target_cluster: _alias, cluster_selector: _selector, ...forwarded } = body;
    const answer = await this.#send(
      caller,
      selector,
      'POST',
      `api/cluster/jobs/${kind}`,
      Buffer.from(JSON.stringify(forwarded)),
    );
    const reply = await toReply(answer);
    if (reply.status < 200 || reply.status >= 300 || !isObject(reply.body)) return reply;
    const jobId = reply.body.job_id ?? reply.body.id;
    if (kind === 'submit' && typeof jobId === 'string') {
      const at = this.now().toISOString();
      this.shadows.insert({
        jobId,
        federationId: answer.peer.id,
        clusterSelector: selector,
        userId: caller.principal.userId,
        createdAt: at,
      });
    }
    return { ...reply, body: { ...reply.body, cluster_selector: selector } };
  }

  /** The peer's answer for a job this caller submitted through the shim; null when `jobId` is not such a job. */
  async shadowed(caller: Caller, jobId: string, action: ShadowAction): Promise<Reply | null> {
    const shadow = this.shadows.get(jobId);
    if (!shadow || shadow.userId !== caller.principal.userId) return null;
    const method = action === 'cancel' ? 'POST' : 'GET';
    return toReply(
      await this.#send(caller, shadow.federationId, method, `api/cluster/jobs/${encodeURIComponent(jobId)}/${action}`),
    );
  }

  #send(caller: Caller, selector: string, method: HttpMethod, remotePath: string, body?: Buffer): Promise<MeshAnswer> {
    return this.egress.send({
      principal: caller.principal,
      bearer: caller.bearer,
      selector,
      method,
      remotePath,
      query: '',
      headers: body
        ? { 'content-type': 'application/json', accept: 'application/json' }
        : { accept: 'application/json' },
      body,
      inbound: caller.inbound,
      span: caller.span,
    });
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The peer's status and JSON body, with the mesh correlation id; a non-JSON answer is a bad gateway. */
async function toReply(answer: MeshAnswer): Promise<Reply> {
  const { statusCode, body } = answer.response;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > PEER_ANSWER_MAX_BYTES)
        throw MeshErrors.make.mesh_proxy_bad_gateway({ layer: 'http', cause: 'peer_answer_too_large' });
      chunks.push(chunk);
    }
  } catch (error) {
    body.destroy();
    throw error instanceof ApiError
      ? error
      : MeshErrors.make.mesh_proxy_bad_gateway({ layer: 'http', cause: 'peer_answer_incomplete' }, error);
  }
  const headers = { [MESH.correlationId]: answer.correlationId };
  if (size === 0) return { status: statusCode, headers };
  try {
    return { status: statusCode, headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch (error) {
    throw MeshErrors.make.mesh_proxy_bad_gateway({ layer: 'http', cause: 'peer_answer_not_json' }, error);
  }
}
