/**
 * What a deployment is made of, as the API, `meshgate deploy` and the console send it: the create body and the
 * change an owner or administrator makes. Unknown fields are ignored.
 */
import { z } from 'zod';
import { VISIBILITIES } from './access.ts';
import type { ReplicaRecord } from './schema.ts';
import type { DeploymentRow } from './store.ts';

/** `h2c://` is cleartext HTTP/2 with prior knowledge (RFC 9113 §3.3), as gRPC inference servers speak it. */
const upstreamUrl = z
  .url({ protocol: /^(https?|h2c)$/, error: 'must be an http://, https:// or h2c:// URL' })
  .refine((u) => {
    // Refinements run even after the URL check failed (zod 4); that failure is already reported.
    const url = URL.parse(u);
    return !url || (!url.username && !url.password && !url.search && !url.hash);
  }, 'must carry no credentials, query or fragment');

const replicaInput = z.object({
  url: upstreamUrl,
  /** Its share of the traffic relative to the others'. */
  weight: z.number().int().min(1).max(1000).default(1),
});

/** What an administrator may set on a deployment's data plane, at creation or later. */
const dataPlaneFields = {
  /** Replicas, 1–64, balanced by least outstanding requests (balancer.ts); `upstream` is the one-replica form. */
  upstreams: z
    .array(replicaInput)
    .min(1)
    .max(64)
    .refine((list) => new Set(list.map((r) => normalUrl(r.url))).size === list.length, 'replica URLs must differ')
    .optional(),
  /** `cookie`: a browser stays on its replica while that replica stays in rotation. */
  affinity: z.enum(['none', 'cookie']).optional(),
  /** Further attempts after a failure that is safe to retry (retry.ts). */
  retries: z.number().int().min(0).max(5).nullish(),
  /** Requests in flight per process; more wait their fair share (fair-share.ts). */
  max_concurrent: z.number().int().min(1).max(65_536).nullish(),
  /** Longest wait for a slot, then 503 upstream_busy. */
  queue_timeout_ms: z.number().int().min(1).max(600_000).nullish(),
  /** Per caller (the user; the client address for anonymous callers), across every process and node. */
  rate_limit: z
    .object({
      requests_per_second: z.number().positive().max(1_000_000),
      burst: z.number().int().min(1).max(1_000_000),
    })
    .nullish(),
};

/** The create body (and the CLI's flags): unknown fields are ignored. `upstream` or `upstreams`, not both. */
export const deploymentInput = z
  .object({
    kind: z.enum(['model', 'app', 'tool']),
    name: z.string().trim().min(1).max(128),
    upstream: upstreamUrl.optional(),
    ...dataPlaneFields,
    strip_prefix: z.boolean().default(true),
    websocket: z.boolean().default(true),
    timeout_seconds: z.number().positive().max(3600).nullish(),
    requires_auth: z.boolean().default(true),
    forward_authorization: z.boolean().default(false),
    /** Legacy port-based runtime URL; honoured only when the operator enabled it. */
    legacy_port: z.number().int().min(1).max(65535).nullish(),
    /** `authenticated` shares it with every native-realm user; `private` leaves it to its viewers (access.ts). */
    visibility: z.enum(VISIBILITIES).default('private'),
    /** Probe each replica with a GET of this path (below its URL) instead of a TCP connect (health.ts). */
    health_path: z
      .string()
      .max(1024)
      .regex(/^\/[^\s#]*$/, 'must be a path starting with /, without spaces or fragment')
      .nullish(),
  })
  .refine((input) => (input.upstream === undefined) !== (input.upstreams === undefined), {
    message: 'give `upstream` or `upstreams`, one of them',
    path: ['upstreams'],
  });
export type DeploymentInput = z.output<typeof deploymentInput>;

/**
 * A change to a deployment: its owner (or an administrator) changes who sees it; only administrators change where
 * and how it is served.
 */
export const deploymentPatch = z
  .object({ visibility: z.enum(VISIBILITIES).optional(), upstream: upstreamUrl.optional(), ...dataPlaneFields })
  .refine((patch) => !(patch.upstream !== undefined && patch.upstreams !== undefined), {
    message: 'give `upstream` or `upstreams`, not both',
    path: ['upstreams'],
  });
export type DeploymentPatch = z.output<typeof deploymentPatch>;

export function normalUrl(url: string): string {
  return url.replace(/\/+$/, '');
}

/** The replicas as stored: `upstream` is the first one's URL, `upstreams` null for the one-replica form. */
export function replicaColumns(input: {
  upstream?: string | undefined;
  upstreams?: { url: string; weight: number }[] | undefined;
}) {
  if (input.upstreams)
    return {
      upstream: normalUrl((input.upstreams[0] as { url: string }).url),
      upstreams: input.upstreams.map((r) => ({ url: normalUrl(r.url), weight: r.weight })),
    };
  return { upstream: normalUrl(input.upstream as string), upstreams: null };
}

/** Every replica of a row: its `upstreams`, or its one `upstream` with weight 1. */
export function replicasOf(row: Pick<DeploymentRow, 'upstream' | 'upstreams'>): ReplicaRecord[] {
  return row.upstreams ?? [{ url: row.upstream, weight: 1 }];
}

/** The data-plane columns a create body or a change sets; what it leaves out stays undefined (unchanged). */
export function dataPlaneColumns(input: Omit<DeploymentPatch, 'visibility'>): Partial<DeploymentRow> {
  const set: Partial<DeploymentRow> = {};
  if (input.upstream !== undefined || input.upstreams !== undefined) Object.assign(set, replicaColumns(input));
  if (input.affinity !== undefined) set.affinity = input.affinity;
  if (input.retries !== undefined) set.retries = input.retries;
  if (input.max_concurrent !== undefined) set.maxConcurrent = input.max_concurrent;
  if (input.queue_timeout_ms !== undefined) set.queueTimeoutMs = input.queue_timeout_ms;
  if (input.rate_limit !== undefined) set.rateLimit = input.rate_limit;
  return set;
}
