/**
 * The `serving` section of the configuration (gateway/config/schema.ts): the runtime proxy's pools, admission,
 * outlier detection and upstream probes (docs/serving.md).
 */
import { z } from 'zod';

const upstream = z
  .url({ protocol: /^https?$/ })
  .nullable()
  .default(null);

export const servingSettings = z
  .strictObject({
    frontendUpstream: upstream.describe(
      'Proxy the frontend (`/`) to this http(s) origin instead of the built-in home page; null = built-in.',
    ),
    notebooksUpstream: upstream.describe('Upstream of `/notebooks` when that service is enabled; null = not offered.'),
    adminComputeUpstream: upstream.describe(
      'Upstream of `/admin/compute` (administrators only) when enabled; null = not offered.',
    ),
    defaultTimeoutSeconds: z
      .number()
      .positive()
      .max(3600)
      .default(600)
      .describe('Upstream response timeout of a deployment that sets none.'),
    upstreamConnections: z
      .number()
      .int()
      .min(1)
      .max(65_536)
      .default(4096)
      .describe(
        'Keep-alive connections per upstream replica (its pool); an HTTP/1.1 stream holds one for its ' +
          'whole life, so keep it at least `maxConcurrentRequests`. HTTP/2 replicas multiplex on far fewer.',
      ),
    maxConcurrentRequests: z
      .number()
      .int()
      .min(1)
      .max(65_536)
      .default(4096)
      .describe(
        'Requests one deployment may have in flight from one process (its `max_concurrent` may lower it). ' +
          'One caller may use all of it while nobody waits; beyond it requests wait, fairly across callers.',
      ),
    queueTimeoutMs: z
      .number()
      .int()
      .min(1)
      .max(600_000)
      .default(10_000)
      .describe(
        'Longest a request waits for a slot of a full deployment (its `queue_timeout_ms` overrides it): then 503 ' +
          '`upstream_busy` with Retry-After.',
      ),
    outlierConsecutiveFailures: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(5)
      .describe('Consecutive connect failures or 5xx answers after which a process ejects a replica.'),
    outlierBaseEjectionMs: z
      .number()
      .int()
      .min(10)
      .max(3_600_000)
      .default(1000)
      .describe("A passive ejection's first length; it doubles with each ejection in a row."),
    outlierMaxEjectionMs: z
      .number()
      .int()
      .min(10)
      .max(3_600_000)
      .default(30_000)
      .describe('Longest one passive ejection lasts.'),
    legacyPortListeners: z
      .boolean()
      .default(false)
      .describe(
        "Legacy: honour a deployment's `legacy_port` with its own HTTPS " +
          'listener (spec: port-based runtime URLs are legacy).',
      ),
    healthIntervalMs: z
      .number()
      .int()
      .min(100)
      .max(3_600_000)
      .default(15_000)
      .describe("How often each deployment's upstream is probed (the next round starts this long after one ends)."),
    healthTimeoutMs: z
      .number()
      .int()
      .min(50)
      .max(60_000)
      .default(2000)
      .describe('Longest one upstream health probe may take (TCP connect, or the HTTP GET of its health path).'),
    healthConcurrency: z
      .number()
      .int()
      .min(1)
      .max(256)
      .default(8)
      .describe('Upstream health probes in flight at once.'),
    healthUnhealthyThreshold: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(3)
      .describe('Failed probes in a row that eject a replica from every process.'),
    healthHealthyThreshold: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(2)
      .describe('Passed probes in a row that admit an ejected replica again.'),
  })
  .prefault({});
