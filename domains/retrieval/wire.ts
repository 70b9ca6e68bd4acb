/**
 * Retrieval wire shapes: the create body as the SDK
 * sends it (unknown keys such as `sdk_session`, `query`, `k` ignored) and
 * the RetrievalJob / RetrievalJobStatus superset answered by create, status,
 * list and cancel (both `job_id` and `id`, so old and new clients each find theirs).
 */
import { z } from 'zod';
import type { JobRow } from './store.ts';
import type { StreamProtocol } from './tokens.ts';

const scalar = z.union([z.string().max(65_536), z.number(), z.boolean(), z.null()]);

export const createBody = z.object({
  dataset_urn: z.string().min(1).max(16_384),
  transport: z.enum(['auto', 'inline', 'sse', 'grpc']).nullish(),
  /** Which gRPC service a `grpc` job is read with: Arrow Flight DoGet (the default) or platform.retrieval.v1. */
  grpc_protocol: z.enum(['arrow-flight', 'platform.retrieval.v1']).nullish(),
  filters: z
    .record(z.string().min(1).max(1024), z.union([scalar, z.array(scalar).max(10_000)]))
    .nullish()
    .refine((f) => !f || Object.keys(f).length <= 256, 'at most 256 filters'),
  columns: z.array(z.string().min(1).max(1024)).min(1).max(10_000).nullish(),
  limit_rows: z.number().int().min(1).nullish(),
  offset: z.number().int().min(0).nullish(),
  options: z.record(z.string(), z.unknown()).nullish(),
  batch_size: z.number().int().min(1).max(100_000).nullish(),
  credential_override: z.string().max(65_536).nullish(),
  format_hint: z.string().max(64).nullish(),
});
export type CreateBody = z.infer<typeof createBody>;

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  offset: z.coerce.number().int().min(0).default(0),
});

/** The stored request: everything but the credential override. */
export interface StoredRequest {
  filters: Record<string, z.infer<typeof scalar> | z.infer<typeof scalar>[]>;
  columns: string[] | null;
  limit_rows: number | null;
  offset: number;
  options: Record<string, unknown>;
  batch_size: number;
  format_hint: string | null;
  /** Absent on jobs stored before Arrow Flight: those were platform.retrieval.v1 jobs. */
  grpc_protocol?: StreamProtocol;
  /** The cluster node whose memory holds the job's credential override (cluster.ts); absent without one. */
  override_node?: string;
}

export interface DatasetBlock {
  urn: string;
  platform: string;
  path: string | null;
  format: string | null;
  estimated_bytes: null;
  estimated_rows: null;
}

export interface InlineBlock {
  media_type: 'application/json';
  data: readonly Record<string, unknown>[];
  row_count: number;
  metadata: Record<string, unknown>;
}

/** Where a job's token stream is read: the part of its `grpc` block its transport decides. */
export interface GrpcLocation {
  /** platform.retrieval.v1 only: `grpcs://host:port` (Arrow Flight clients read `endpoints`). */
  endpoint?: string;
  endpoints: { location: string }[];
  service: 'platform.retrieval.v1.RetrievalService' | 'arrow.flight.protocol.FlightService';
}

export interface GrpcBlock extends GrpcLocation {
  token: string;
  expires_at: string;
  protocol: StreamProtocol;
}

export interface Progress {
  rows: number;
  bytes: number;
  chunks: number;
}

export function jobView(
  row: JobRow,
  progress: Progress,
  extra: { inline?: InlineBlock | null; grpc?: GrpcBlock | null } = {},
) {
  return {
    job_id: row.id,
    id: row.id,
    status: row.status,
    transport: row.transport,
    dataset_urn: row.datasetUrn,
    dataset: row.dataset as unknown as DatasetBlock,
    inline: extra.inline ?? null,
    grpc: extra.grpc ?? null,
    progress: { bytes_processed: progress.bytes, rows_processed: progress.rows, chunks_emitted: progress.chunks },
    error: row.error,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
export type JobView = ReturnType<typeof jobView>;
