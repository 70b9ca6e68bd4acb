/**
 * Inline transport: the result is read batch by batch and
 * kept only while its JSON stays under the inline threshold; the first
 * batch that would cross it stops the read (the source is not drained), and
 * the caller resolves `auto` to SSE or refuses `inline` with 422.
 */
import { parseExact } from '../exact-json.ts';
import type { Chunk, StreamSummary } from '../pipeline.ts';
import type { Row } from '../sources/types.ts';
import type { InlineBlock } from '../wire.ts';

/** The inline block, or null when the serialized result would exceed `thresholdBytes`. */
export async function collectInline(
  chunks: AsyncGenerator<Chunk>,
  summary: StreamSummary,
  thresholdBytes: number,
): Promise<InlineBlock | null> {
  const rows: Row[] = [];
  // Size of `[` + rows joined by `,` + `]`: each chunk's array contributes its inner bytes.
  let size = 2;
  for await (const chunk of chunks) {
    size += chunk.data.length - 2 + (rows.length > 0 ? 1 : 0);
    if (size > thresholdBytes) {
      await chunks.return(undefined);
      return null;
    }
    // Parsed back (at most the threshold's bytes) to sit in the job's JSON answer, every digit kept.
    for (const row of parseExact(chunk.data.toString()) as Row[]) rows.push(row);
  }
  return { media_type: 'application/json', data: rows, row_count: rows.length, metadata: footer(summary) };
}

/** `metadata` of a finished result: `gate_audit` (a dict) and `filtered` only when the dataset is gated. */
export function footer(summary: StreamSummary): Record<string, unknown> {
  return summary.gateAudit ? { gate_audit: summary.gateAudit, filtered: summary.filtered } : {};
}
