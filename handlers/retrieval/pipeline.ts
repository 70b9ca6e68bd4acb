/**
 * Source batches → gate → chunks, the one path every transport reads
 * (DESIGN.md §6): one batch in flight at a time, so memory is bounded by
 * the batch size whatever the result size; the consumer's pace (socket
 * backpressure) is the pace at which the source is read.
 */
import { type GateRunner, gateAudit } from './gates/runner.ts';
import { project } from './sources/scan.ts';
import type { ReadRequest, Row, Source } from './sources/types.ts';

export interface ChunkMetadata {
  gate_audit?: ReturnType<typeof gateAudit>;
  filtered?: boolean;
}

export interface Chunk {
  /** From 1 (contract §8.4). */
  readonly sequence: number;
  readonly rows: readonly Row[];
  /** `rows` serialized once; every transport sends these bytes. */
  readonly dataJson: string;
  readonly bytes: number;
  readonly metadata: ChunkMetadata;
}

export interface StreamSummary {
  rows: number;
  chunks: number;
  filtered: boolean;
  /** Present when the dataset has a gate (contract §9.3 footer). */
  gateAudit: ReturnType<typeof gateAudit> | null;
}

export interface ReadPlan {
  readonly source: Source;
  readonly request: ReadRequest;
  readonly gate: GateRunner | null;
  /** Called for each batch that failed closed (for the log; never with row content). */
  readonly onViolation: (problem: string) => void;
}

/** Columns to read: the caller's, plus what the gate needs to decide (projected away afterwards). */
export function sourceColumns(columns: readonly string[] | null, gate: GateRunner | null): readonly string[] | null {
  if (columns === null || gate === null) return columns;
  return [...new Set([...columns, ...gate.requiredFields])];
}

/**
 * A batch whose JSON exceeds this is sent as several chunks (halving until
 * each fits, or is one row), so a message stays under the 4 MiB a default
 * gRPC client accepts even with the larger gRPC batch (docs/retrieval.md).
 * Deterministic for a given source order and batch size: sequence numbers,
 * and so resume, stay stable.
 */
const MAX_CHUNK_JSON_BYTES = 1 << 20;

function* sized(rows: readonly Row[]): Generator<{ rows: readonly Row[]; dataJson: string }> {
  const dataJson = JSON.stringify(rows);
  if (dataJson.length <= MAX_CHUNK_JSON_BYTES / 3 || rows.length === 1 || Buffer.byteLength(dataJson) <= MAX_CHUNK_JSON_BYTES) {
    yield { rows, dataJson };
    return;
  }
  const half = Math.ceil(rows.length / 2);
  yield* sized(rows.slice(0, half));
  yield* sized(rows.slice(half));
}

export async function* chunksOf(plan: ReadPlan, userColumns: readonly string[] | null, summary: StreamSummary): AsyncGenerator<Chunk> {
  const { gate } = plan;
  const narrow = gate !== null && userColumns !== null && gate.requiredFields.some((f) => !userColumns.includes(f));
  for await (const batch of plan.source.read(plan.request)) {
    let rows: readonly Row[] = batch;
    if (gate) {
      const outcome = gate.run(batch);
      if (outcome.violation) plan.onViolation(outcome.violation);
      if (outcome.withheld > 0) summary.filtered = true;
      rows = narrow ? outcome.released.map((r) => project(r, userColumns)) : outcome.released;
      summary.gateAudit = gateAudit(summary.filtered);
    }
    if (rows.length === 0) continue;
    for (const piece of sized(rows)) {
      summary.rows += piece.rows.length;
      summary.chunks += 1;
      const metadata: ChunkMetadata = gate ? { gate_audit: gateAudit(summary.filtered), filtered: summary.filtered } : {};
      yield { sequence: summary.chunks, ...piece, bytes: Buffer.byteLength(piece.dataJson), metadata };
    }
  }
}

export function emptySummary(gated: boolean): StreamSummary {
  return { rows: 0, chunks: 0, filtered: false, gateAudit: gated ? gateAudit(false) : null };
}
