/**
 * The `retrieval` section of the configuration (gateway/config/schema.ts): inline and streaming limits, the
 * filesystem roots, and the endpoints a job's `credential_override` may send the gateway to.
 */
import { z } from 'zod';

const csv = z.array(z.string().min(1));

/** `host` or `host:port` as a URL's `host` spells it (IPv6 in brackets), compared lower-cased. */
const endpointHost = z
  .string()
  .regex(/^([a-z0-9.-]+|\[[0-9a-f:.]+\])(:\d{1,5})?$/i, 'a host or host:port')
  .transform((host) => host.toLowerCase());

export const retrievalSettings = z
  .strictObject({
    inlineThresholdBytes: z
      .number()
      .int()
      .min(1024)
      .default(1024 * 1024)
      .describe(
        'Largest serialized JSON result answered inline; `auto` streams over ' +
          'SSE beyond it, `inline` is refused with 422.',
      ),
    fsRoots: csv
      .default([])
      .describe('Folders filesystem datasets may live under; empty = filesystem retrieval refused.'),
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(1000)
      .describe('Rows per chunk when a job does not ask for a batch_size.'),
    heartbeatMs: z
      .number()
      .int()
      .min(10)
      .default(15_000)
      .describe('Idle time after which an SSE stream sends a `:` heartbeat comment.'),
    grpcTokenTtlSeconds: z
      .number()
      .int()
      .min(10)
      .max(3600)
      .default(300)
      .describe("Lifetime of the gRPC stream token in a job's `grpc` block."),
    flightEndpointsMax: z
      .number()
      .int()
      .min(1)
      .max(64)
      .default(4)
      .describe(
        'Most endpoints an Arrow Flight GetFlightInfo splits a PostgreSQL table read into, ' +
          'for a client to read them in parallel over as many server backends.',
      ),
    flightEndpointMinPages: z.number().int().min(1).default(1024).describe('Least table pages an endpoint is given.'),
    endpointHosts: z
      .strictObject({
        s3: z
          .array(endpointHost)
          .default([])
          .describe(
            "Hosts (`host` or `host:port`) an S3 job's credential_override may name as its endpoint besides the " +
              "dataset's own; empty = the dataset's own endpoint only (else 422 endpoint_not_allowed).",
          ),
      })
      .prefault({})
      .describe('Per source type: the endpoints a caller may point the gateway at with a credential_override.'),
  })
  .prefault({});
