/**
 * Source batches → gate → chunks, the one path every transport reads
 * (DESIGN.md §6): a streamed job holds at most one chunk ahead of the one
 * being sent (readAhead), so memory is bounded by the batch size whatever
 * the result size; the consumer's pace (socket backpressure) is the pace
 * at which the source is read.
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
  readonly rowCount: number;
  /** The chunk's rows as one JSON array, built once; every transport sends these bytes. */
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
 * gRPC client accepts whatever the rows' width or the job's batch_size
 * (docs/retrieval.md).
 * Deterministic for a given source order and batch size: sequence numbers,
 * and so resume, stay stable.
 */
const MAX_CHUNK_JSON_BYTES = 1 << 20;

/** A batch as the JSON array it is sent as: row objects, or rows the source already encoded. */
const rowsJson = (rows: readonly Row[]): string => JSON.stringify(rows);
const linesJson = (lines: readonly string[]): string => `[${lines.join(',')}]`;

interface Piece {
  readonly rowCount: number;
  readonly dataJson: string;
}

function* sized<T>(items: readonly T[], encode: (items: readonly T[]) => string): Generator<Piece> {
  if (items.length === 0) return;
  const dataJson = encode(items);
  if (dataJson.length <= MAX_CHUNK_JSON_BYTES / 3 || items.length === 1 || Buffer.byteLength(dataJson) <= MAX_CHUNK_JSON_BYTES) {
    yield { rowCount: items.length, dataJson };
    return;
  }
  const half = Math.ceil(items.length / 2);
  yield* sized(items.slice(0, half), encode);
  yield* sized(items.slice(half), encode);
}

/**
 * The stream's pieces. Ungated, from a source that encodes JSON itself:
 * its row texts joined, no row object built (the throughput path,
 * docs/retrieval.md). Otherwise rows, through the gate when there is one.
 */
async function* pieces(plan: ReadPlan, userColumns: readonly string[] | null, summary: StreamSummary): AsyncGenerator<Piece> {
  const { gate, source } = plan;
  if (gate === null && source.readJson) {
    for await (const lines of source.readJson(plan.request)) yield* sized(lines, linesJson);
    return;
  }
  const narrow = gate !== null && userColumns !== null && gate.requiredFields.some((f) => !userColumns.includes(f));
  for await (const batch of source.read(plan.request)) {
    let rows: readonly Row[] = batch;
    if (gate) {
      const outcome = gate.run(batch);
      if (outcome.violation) plan.onViolation(outcome.violation);
      if (outcome.withheld > 0) summary.filtered = true;
      rows = narrow ? outcome.released.map((r) => project(r, userColumns)) : outcome.released;
      summary.gateAudit = gateAudit(summary.filtered);
    }
    yield* sized(rows, rowsJson);
  }
}

export async function* chunksOf(plan: ReadPlan, userColumns: readonly string[] | null, summary: StreamSummary): AsyncGenerator<Chunk> {
  for await (const piece of pieces(plan, userColumns, summary)) {
    summary.rows += piece.rowCount;
    summary.chunks += 1;
    const metadata: ChunkMetadata = plan.gate ? { gate_audit: gateAudit(summary.filtered), filtered: summary.filtered } : {};
    yield { sequence: summary.chunks, ...piece, bytes: Buffer.byteLength(piece.dataJson), metadata };
  }
}

/**
 * Starts producing the next item while the consumer handles this one: a
 * transport waiting for its write to drain (gRPC: until the client's HTTP/2
 * window opens, one round trip per message) overlaps that wait with reading
 * and encoding the next chunk (bench/README.md, retrieval). At most one
 * item is held ahead.
 */
export async function* readAhead<T>(items: AsyncGenerator<T>): AsyncGenerator<T> {
  let next = items.next();
  try {
    for (;;) {
      const item = await next;
      if (item.done) return;
      next = items.next();
      next.catch(() => {}); // observed on the next turn, or dropped when the consumer leaves
      yield item.value;
    }
  } finally {
    await items.return(undefined);
  }
}

export function emptySummary(gated: boolean): StreamSummary {
  return { rows: 0, chunks: 0, filtered: false, gateAudit: gated ? gateAudit(false) : null };
}
