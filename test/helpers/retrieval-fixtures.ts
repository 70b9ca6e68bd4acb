/**
 * The same rows written as CSV, JSON lines and Parquet (hyparquet-writer),
 * so every format and transport can be compared row for row. All columns
 * are text: CSV cells are text, and the comparison must be exact.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';

export type TextRow = Record<string, string>;

export const FORMATS = ['csv', 'jsonl', 'parquet'] as const;
export type Format = (typeof FORMATS)[number];

function csvCell(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** Writes `<base>.csv|.jsonl|.parquet` under `dir`; returns the paths by format. */
export function writeAllFormats(dir: string, base: string, rows: readonly TextRow[]): Record<Format, string> {
  const columns = Object.keys(rows[0] ?? {});
  const paths = {
    csv: join(dir, `${base}.csv`),
    jsonl: join(dir, `${base}.jsonl`),
    parquet: join(dir, `${base}.parquet`),
  };
  const lines = [columns.join(','), ...rows.map((r) => columns.map((c) => csvCell(r[c] as string)).join(','))];
  writeFileSync(paths.csv, `${lines.join('\n')}\n`);
  writeFileSync(paths.jsonl, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const columnData = columns.map((name) => ({
    name,
    data: rows.map((r) => r[name] as string),
    type: 'STRING' as const,
  }));
  // Small row groups so a read spans several of them.
  writeFileSync(paths.parquet, Buffer.from(parquetWriteBuffer({ columnData, rowGroupSize: 700 })));
  return paths;
}

/** 2500 rows across three regions, with a comma and a quote in some notes. */
export function sampleRows(count = 2500): TextRow[] {
  const regions = ['north', 'south', 'east'];
  return Array.from({ length: count }, (_, i) => ({
    id: `r${String(i + 1).padStart(5, '0')}`,
    region: regions[i % 3] as string,
    amount: String((i * 37) % 1000),
    note: i % 50 === 0 ? `note, "quoted" ${i}` : `n${i}`,
  }));
}

/** The clearance fixture the public SDK's acceptance tests use (JSON variant): five rows U, U, U, S, TS. */
export const CLEARANCE_ROWS: TextRow[] = [
  { id: 'r1', classification: 'U', payload: 'unclassified-alpha' },
  { id: 'r2', classification: 'U', payload: 'unclassified-bravo' },
  { id: 'r3', classification: 'U', payload: 'unclassified-charlie' },
  { id: 'r4', classification: 'S', payload: 'secret-delta' },
  { id: 'r5', classification: 'TS', payload: 'topsecret-echo' },
];
