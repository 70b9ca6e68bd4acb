/**
 * A deployment record's fields beyond its row. What the gateway observed
 * of it (`health`, `traffic`); and the fields the platform's public Python SDK reads from a model deployment
 * (kamiwaza-sdk 1.3.0, `UIModelDeployment`; test/integration/domains/retrieval/sdk-python.test.ts):
 * with them, `client.serving.list_deployments()` parses our listing and
 * `client.openai.get_client(model=<name>)` finds the deployment and talks
 * to `<origin><access_path>/v1`. meshgate has no model registry, so the
 * model and its config are the deployment itself (`m_id`, `m_config_id` =
 * its id), and a registered route is live: `DEPLOYED`, with one instance
 * standing for the upstream (its probed health is the record's `health`).
 */
import { z } from 'zod';
import type { ReplicaRecord } from './schema.ts';
import type { DeploymentRow, HealthRow, ReplicaHealthRow, TrafficRow } from './store.ts';

export function sdkModelFields(row: DeploymentRow, runtimePath: string, prefix: string) {
  return {
    m_id: row.id,
    m_config_id: row.id,
    m_name: row.name,
    status: 'DEPLOYED',
    requested_at: row.createdAt,
    deployed_at: row.createdAt,
    access_path_prefix: prefix,
    access_path: runtimePath,
    lb_port: 0,
    instances: [{ id: row.id, deployment_id: row.id, deployed_at: row.createdAt, status: 'DEPLOYED' }],
  };
}

function statusOf(row: { healthy: boolean } | undefined) {
  return row ? (row.healthy ? ('healthy' as const) : ('unhealthy' as const)) : ('unknown' as const);
}

/**
 * The last probe round (health.ts): the deployment is healthy while any replica is; each replica's own verdict,
 * `ejected` when the probes took it out of every process's rotation. `unknown` until the first probe ended. A
 * replica's URL is an internal address: administrators only.
 */
export function healthView(
  row: HealthRow | undefined,
  listed: readonly ReplicaRecord[],
  judged: readonly ReplicaHealthRow[],
  admin: boolean,
) {
  const byUrl = new Map(judged.map((r) => [r.replica, r]));
  return {
    status: statusOf(row),
    reason: row?.reason ?? null,
    detail: row?.detail ?? null,
    checked_at: row?.checkedAt ?? null,
    replicas: listed.map((replica, index) => {
      const probe = byUrl.get(replica.url);
      return {
        index,
        ...(admin ? { url: replica.url } : {}),
        weight: replica.weight,
        status: statusOf(probe),
        ejected: probe?.ejected ?? false,
        reason: probe?.reason ?? null,
        detail: probe?.detail ?? null,
        checked_at: probe?.checkedAt ?? null,
      };
    }),
  };
}

/**
 * Requests proxied since the deployment was registered: the table's sum over every process plus this process's
 * share not written yet (traffic.ts), whose last request was within the flush interval, so `now` stands for it.
 */
export function trafficView(row: TrafficRow | undefined, unflushed: number, now: () => Date) {
  return {
    requests: (row?.requests ?? 0) + unflushed,
    last_request_at: unflushed > 0 ? now().toISOString() : (row?.lastRequestAt ?? null),
  };
}

/** The two as the API document states them. */
export const observedFields = {
  health: z.object({
    status: z.enum(['healthy', 'unhealthy', 'unknown']),
    reason: z.string().nullable().describe('why it is unhealthy: a stable reason (docs/serving.md)'),
    detail: z.string().nullable().describe('the failing code: ECONNREFUSED, HTTP 503, ...'),
    checked_at: z.iso.datetime().nullable(),
    replicas: z.array(
      z.looseObject({
        index: z.number().int(),
        weight: z.number().int(),
        status: z.enum(['healthy', 'unhealthy', 'unknown']),
        ejected: z.boolean().describe('taken out of rotation by failed probes, in every process'),
      }),
    ),
  }),
  traffic: z.object({
    requests: z.number().int().min(0).describe('requests proxied since it was registered, all processes'),
    last_request_at: z.iso.datetime().nullable(),
  }),
};
