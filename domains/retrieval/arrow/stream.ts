/**
 * A job's read as Arrow IPC messages: the schema first, then one record
 * batch per source batch. Rows a gate withholds never reach a column
 * writer (releasedRows). A source that builds Arrow columns itself
 * (Postgres, from COPY text) is read that way when no gate is bound: no
 * row object is made (docs/retrieval.md, "Throughput choices").
 */
import { Schema } from 'apache-arrow';
import { type ReadPlan, releasedRows, type StreamSummary } from '../pipeline.ts';
import { batchMessage, type IpcMessage, schemaMessage } from './ipc.ts';
import { streamColumns } from './mapping.ts';
import { arrowField } from './types.ts';
import { columnWriter } from './writers.ts';

async function* fromRows(
  plan: ReadPlan,
  userColumns: readonly string[] | null,
  summary: StreamSummary,
): AsyncGenerator<IpcMessage> {
  const declared = await plan.source.schema(plan.request.signal);
  let schema: Schema | null = null;
  let names: readonly string[] = [];
  let writers: ReturnType<typeof columnWriter>[] = [];
  for await (const rows of releasedRows(plan, userColumns, summary)) {
    if (schema === null) {
      if (rows.length === 0) continue;
      const columns = streamColumns(declared, userColumns, rows);
      schema = new Schema(columns.map(arrowField));
      names = columns.map((c) => c.name);
      writers = columns.map((c) => columnWriter(c.type));
      yield schemaMessage(schema);
    }
    if (rows.length === 0) continue;
    for (let c = 0; c < names.length; c++) {
      const writer = writers[c] as ReturnType<typeof columnWriter>;
      const name = names[c] as string;
      for (const row of rows) writer.push(row[name]);
    }
    yield batchMessage(
      schema,
      writers.map((w) => w.finish()),
      rows.length,
    );
  }
  // No row released: the schema alone, typed by what the source declares.
  if (schema === null) yield schemaMessage(new Schema(streamColumns(declared, userColumns, []).map(arrowField)));
}

export async function* arrowMessages(
  plan: ReadPlan,
  userColumns: readonly string[] | null,
  summary: StreamSummary,
): AsyncGenerator<IpcMessage> {
  const { gate, source } = plan;
  const messages =
    gate === null && source.readArrow ? source.readArrow(plan.request) : fromRows(plan, userColumns, summary);
  for await (const message of messages) {
    if (message.rowCount > 0) {
      summary.rows += message.rowCount;
      summary.chunks += 1;
    }
    yield message;
  }
}
