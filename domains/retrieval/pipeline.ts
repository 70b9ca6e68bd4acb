/**
 * Source batches → gate → chunks, the one path every transport reads:
 * a streamed job holds at most one chunk ahead of the one
 * being sent (readAhead), so memory is bounded by the batch size whatever
 * the result size; the consumer's pace (socket backpressure) is the pace
 * at which the source is read.
 */
import { type GateRunner, gateAudit } from './gates/runner.ts';
import { project } from './sources/scan.ts';
import type { JsonRows, ReadRequest, Row, Source } from './sources/types.ts';

export interface ChunkMetadata {
  gate_audit?: ReturnType<typeof gateAudit>;
  filtered?: boolean;
}

export interface Chunk {
  /** From 1. */
  readonly sequence: number;
  readonly rowCount: number;
  /**
   * The chunk's rows as one UTF-8 JSON array, built once; every transport
   * sends these bytes as they are (docs/retrieval.md "Throughput choices").
   */
  readonly data: Buffer;
  readonly metadata: ChunkMetadata;
}

export interface StreamSummary {
  rows: number;
  chunks: number;
  filtered: boolean;
  /** Present when the dataset has a gate (the gate footer). */
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
export function sourceColumns(
  columns: readonly string[] | null,
  gate: GateRunner | null,
): Pick<ReadRequest, 'columns' | 'gateColumns'> {
  if (columns === null || gate === null) return { columns };
  const gateColumns = gate.requiredFields.filter((f) => !columns.includes(f));
  return { columns: [...new Set([...columns, ...gateColumns])], gateColumns };
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

interface Piece {
  readonly rowCount: number;
  readonly data: Buffer;
}

/** Rows [from, to) of a batch as the JSON array they are sent as. */
type Encode = (from: number, to: number) => Buffer;

/** Row objects: one JSON.stringify and one UTF-8 encode per piece. */
const rowsJson =
  (rows: readonly Row[]): Encode =>
  (from, to) =>
    Buffer.from(JSON.stringify(from === 0 && to === rows.length ? rows : rows.slice(from, to)));

const OPEN = Buffer.from('[');
const CLOSE = Buffer.from(']');

/** A batch the source encoded: itself whole (no copy), or a range of its rows' bytes bracketed. */
const encodedJson =
  ({ json, ends }: JsonRows): Encode =>
  (from, to) => {
    if (from === 0 && to === ends.length) return json;
    const start = from === 0 ? 1 : (ends[from - 1] as number) + 1;
    return Buffer.concat([OPEN, json.subarray(start, ends[to - 1]), CLOSE]);
  };

function* sized(encode: Encode, from: number, to: number): Generator<Piece> {
  if (to === from) return;
  const data = encode(from, to);
  if (to - from === 1 || data.length <= MAX_CHUNK_JSON_BYTES) {
    yield { rowCount: to - from, data };
    return;
  }
  const half = from + Math.ceil((to - from) / 2);
  yield* sized(encode, from, half);
  yield* sized(encode, half, to);
}

/**
 * The rows a stream releases, batch by batch: the source's batches through
 * the gate when there is one (withheld rows never leave this function),
 * narrowed back to the caller's columns when the gate needed more.
 */
export async function* releasedRows(
  plan: ReadPlan,
  userColumns: readonly string[] | null,
  summary: StreamSummary,
): AsyncGenerator<readonly Row[]> {
  const { gate, source } = plan;
  const narrow = gate !== null && userColumns !== null && gate.requiredFields.some((f) => !userColumns.includes(f));
  for await (const batch of source.read(plan.request)) {
    if (!gate) {
      yield batch;
      continue;
    }
    const outcome = gate.run(batch);
    if (outcome.violation) plan.onViolation(outcome.violation);
    if (outcome.withheld > 0) summary.filtered = true;
    summary.gateAudit = gateAudit(summary.filtered);
    yield narrow ? outcome.released.map((r) => project(r, userColumns)) : outcome.released;
  }
}

/**
 * The stream's pieces. Ungated, from a source that encodes JSON itself:
 * its bytes, no row object built (the throughput path, docs/retrieval.md).
 * Otherwise rows, through the gate when there is one.
 */
async function* pieces(
  plan: ReadPlan,
  userColumns: readonly string[] | null,
  summary: StreamSummary,
): AsyncGenerator<Piece> {
  const { gate, source } = plan;
  if (gate === null && source.readJson) {
    for await (const batch of source.readJson(plan.request)) yield* sized(encodedJson(batch), 0, batch.ends.length);
    return;
  }
  for await (const rows of releasedRows(plan, userColumns, summary)) yield* sized(rowsJson(rows), 0, rows.length);
}

export async function* chunksOf(
  plan: ReadPlan,
  userColumns: readonly string[] | null,
  summary: StreamSummary,
): AsyncGenerator<Chunk> {
  for await (const piece of pieces(plan, userColumns, summary)) {
    summary.rows += piece.rowCount;
    summary.chunks += 1;
    const metadata: ChunkMetadata = plan.gate
      ? { gate_audit: gateAudit(summary.filtered), filtered: summary.filtered }
      : {};
    yield { sequence: summary.chunks, ...piece, metadata };
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
