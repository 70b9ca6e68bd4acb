/**
 * What a retrieval run records: rows and bytes sent and the run's duration
 * by source kind (`postgres`, `s3`, ...: the registered sources) and
 * transport (`inline`, `sse`, `grpc`, `flight`), and its span. Job ids and
 * dataset URNs go into the span only, never into a label.
 */
import { DURATION_BUCKETS, type MetricsRegistry } from '../../gateway/observability/metrics.ts';
import type { Span, Tracing } from '../../gateway/observability/tracing.ts';

export type RunTransport = 'inline' | 'sse' | 'grpc' | 'flight';

export interface RunObservation {
  chunk(rows: number, bytes: number): void;
  end(error?: unknown): void;
}

export type RunObserver = (source: string, transport: RunTransport, parent: Span, jobId: string) => RunObservation;

export function observeRuns(metrics: MetricsRegistry, tracing: Tracing): RunObserver {
  const labels = ['source', 'transport'] as const;
  const rows = metrics.counter({
    name: 'retrieval_rows_total',
    help: 'Rows sent by retrieval runs, by source kind and transport.',
    labels,
  });
  const bytes = metrics.counter({
    name: 'retrieval_bytes_total',
    help: 'Bytes of rows sent by retrieval runs (JSON or Arrow).',
    labels,
  });
  const duration = metrics.histogram({
    name: 'retrieval_duration_seconds',
    help:
      'Retrieval runs from the source opened until the last chunk was sent ' +
      '(or the run failed), by source and transport.',
    labels: [...labels, 'outcome'],
    buckets: DURATION_BUCKETS,
  });
  return (source, transport, parent, jobId) => {
    const started = process.hrtime.bigint();
    const span = tracing.child('retrieval.run', parent, undefined, {
      'meshgate.source': source,
      'meshgate.transport': transport,
      'meshgate.job_id': jobId,
    });
    const sentRows = rows.labels(source, transport);
    const sentBytes = bytes.labels(source, transport);
    return {
      chunk(rowCount, byteCount) {
        sentRows.inc(rowCount);
        sentBytes.inc(byteCount);
      },
      end(error) {
        duration
          .labels(source, transport, error === undefined ? 'completed' : 'failed')
          .observe(Number(process.hrtime.bigint() - started) / 1e9);
        if (span !== parent) tracing.end(span, error);
      },
    };
  };
}
