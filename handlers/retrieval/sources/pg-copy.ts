/**
 * The bytes of `COPY (SELECT row_to_json(…) …) TO STDOUT` (text format) as
 * batches of JSON documents, one per row (docs/retrieval.md, Postgres). In
 * text format a row ends with a newline and a value escapes backslash and
 * the control characters `\b \f \n \r \t \v` (PostgreSQL manual, COPY "Text
 * Format"); a row's line therefore holds no raw newline.
 */
import { StringDecoder } from 'node:string_decoder';

/**
 * Undoes COPY text escaping; a line without a backslash (most rows) is
 * returned as it is. Inside JSON strings row_to_json escapes control
 * characters itself, so an escaped control character can only be
 * whitespace between tokens (a `json` column keeps its input's layout):
 * it becomes a space, and a row's JSON never holds a line break, which an
 * SSE `data:` line could not carry.
 */
export function unescapeCopyText(line: string): string {
  if (!line.includes('\\')) return line;
  return line.replace(/\\(.)/g, (_, c: string) => (c === '\\' ? c : ' '));
}

/**
 * Lines of a COPY text stream in batches of at most `batchSize`. Chunks may
 * split a line or a UTF-8 character anywhere. Iterating the stream with
 * `for await` reads the next chunk only when the consumer asks for the next
 * batch, so the consumer's pace is the source's pace.
 */
export async function* copyLineBatches(chunks: AsyncIterable<Buffer>, batchSize: number, signal: AbortSignal): AsyncGenerator<string[]> {
  const decoder = new StringDecoder('utf8');
  let carry = '';
  let batch: string[] = [];
  for await (const chunk of chunks) {
    const text = decoder.write(chunk);
    // A chunk inside one long row only extends it (no re-split of what was carried).
    if (!text.includes('\n')) {
      carry += text;
      continue;
    }
    const lines = (carry + text).split('\n');
    carry = lines.pop() as string;
    for (const line of lines) {
      batch.push(unescapeCopyText(line));
      if (batch.length === batchSize) {
        signal.throwIfAborted();
        yield batch;
        batch = [];
      }
    }
  }
  if (carry + decoder.end() !== '') throw new Error('COPY output ended inside a row');
  if (batch.length > 0) {
    signal.throwIfAborted();
    yield batch;
  }
}
