/**
 * The result marker (Result marker): the last
 * stdout line beginning `KZ_MESH_RUN_ON_JSON::` whose remainder parses as
 * JSON is the result. Logs are read backwards in chunks, so a huge log costs
 * only the bytes after its last marker, never the whole file in memory.
 */
import type { LogSource } from './runtimes/types.ts';

export const RESULT_MARKER = 'KZ_MESH_RUN_ON_JSON::';
const MARKER_BYTES = Buffer.from(RESULT_MARKER, 'utf8');
const CHUNK = 64 * 1024;

export type MarkerScan = { found: true; value: unknown } | { found: false };

/**
 * Scans from the end. A marker line whose JSON does not parse is skipped
 * (the scan goes on to an earlier one), as is any line longer than
 * `maxLineBytes`, which bounds memory on a log with no newlines.
 */
export async function findMarker(source: LogSource, maxLineBytes = 16 * 1024 * 1024): Promise<MarkerScan> {
  // `carry` holds the part of the current line that lies after the chunk being read.
  let carry: Buffer[] = [];
  let carryBytes = 0;
  let overlong = false;
  const completeLine = (piece: Buffer): MarkerScan | null => {
    const hit =
      !overlong && carryBytes + piece.length <= maxLineBytes ? parseMarkerLine(Buffer.concat([piece, ...carry])) : null;
    carry = [];
    carryBytes = 0;
    overlong = false;
    return hit;
  };
  let position = source.size;
  while (position > 0) {
    const start = Math.max(0, position - CHUNK);
    const chunk = await source.read(start, position - start);
    position = start;
    let end = chunk.length;
    // lastIndexOf with a negative offset counts from the end, hence the end > 0 guard.
    for (
      let nl = chunk.lastIndexOf(0x0a, end - 1);
      end > 0 && nl >= 0;
      nl = end > 0 ? chunk.lastIndexOf(0x0a, end - 1) : -1
    ) {
      const hit = completeLine(chunk.subarray(nl + 1, end));
      if (hit) return hit;
      end = nl;
    }
    const head = chunk.subarray(0, end);
    if (overlong || carryBytes + head.length > maxLineBytes) {
      overlong = true;
      carry = [];
      carryBytes = 0;
    } else {
      carry.unshift(head);
      carryBytes += head.length;
    }
  }
  return completeLine(Buffer.alloc(0)) ?? { found: false };
}

function parseMarkerLine(line: Buffer): MarkerScan | null {
  if (line.length < MARKER_BYTES.length || !line.subarray(0, MARKER_BYTES.length).equals(MARKER_BYTES)) return null;
  const text = line.subarray(MARKER_BYTES.length).toString('utf8').replace(/\r$/, '');
  try {
    return { found: true, value: JSON.parse(text) };
  } catch {
    return null;
  }
}

/** The log text for GET /logs: the whole log, or its last `maxBytes` after a one-line notice. */
export async function readLogText(source: LogSource, maxBytes: number): Promise<string> {
  if (source.size <= maxBytes) return (await source.read(0, source.size)).toString('utf8');
  const tail = await source.read(source.size - maxBytes, maxBytes);
  return `[meshgate: ${source.size - maxBytes} earlier bytes omitted]\n${tail.toString('utf8')}`;
}
