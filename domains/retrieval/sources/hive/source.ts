/**
 * The Hive source (platform `hive`). With a `host` it reads a table from
 * HiveServer2 over Thrift (hive-driver; the connection, its transport, TLS
 * and auth in connection.ts): the schema from `DESCRIBE`, then
 * one `SELECT` with the columns, the filters (IN / IS NULL) and a LIMIT
 * pushed into HiveQL, escaped (sql.ts) after every name was checked
 * against the schema; rows are fetched `batchSize` at a time. Without a host
 * but with a `location`/`path`, it reads a Hive-partitioned directory layout
 * (partitions.ts).
 */
import { abortableRead } from '../abortable.ts';
import type { SecretReader } from '../credentials.ts';
import { checkColumns, jsonSafe, scanBatches } from '../scan.ts';
import type { ReadRequest, Row, SchemaField, Source, SourceFactory, SourceInput } from '../types.ts';
import { classify, type HiveTarget, hiveTarget, type Session, session } from './connection.ts';
import { hivePartitionSource } from './partitions.ts';
import { hiveIdentifier, hiveSelect } from './sql.ts';

type Operation = Awaited<ReturnType<Session['opened']['executeStatement']>>;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

async function run(s: Session, sql: string): Promise<Operation> {
  const operation = await s.guard(s.opened.executeStatement(sql, { runAsync: true }));
  await s.guard(s.utils.waitUntilReady(operation, false, () => {}));
  return operation;
}

async function describe(s: Session, target: HiveTarget): Promise<SchemaField[]> {
  const operation = await run(s, `DESCRIBE ${hiveIdentifier(target.database)}.${hiveIdentifier(target.table)}`);
  await s.guard(s.utils.fetchAll(operation));
  const rows = (s.utils.getResult(operation).getValue() ?? []) as { col_name: string; data_type: string }[];
  await s.guard(operation.close());
  const fields: SchemaField[] = [];
  // Partitioned tables list their partition columns again after a blank row and "# Partition Information".
  for (const row of rows) {
    const name = row.col_name.trim();
    if (name === '' || name.startsWith('#')) break;
    fields.push({ name, type: row.data_type.trim() });
  }
  return fields;
}

/**
 * hive-driver's JSON rows with BIGINT and DECIMAL read exactly: its handler
 * reads an i64 with node-int64's toNumber(), which rounds past 2^53, and
 * turns a DECIMAL (sent by HiveServer2 as its text) into a Number, which
 * keeps 15 to 17 digits. A BIGINT becomes a bigint, which jsonSafe gives as
 * its digits when wide (as for a Parquet INT64); a DECIMAL stays its text
 * (a JSON string; Arrow decimal128 on Flight, arrow/mapping.ts).
 */
function exactRows(s: Session, operation: Parameters<Session['utils']['getResult']>[0]): Row[] {
  const result = s.utils.getResult(operation) as unknown as {
    convertBigInt(value: { toOctetString(): string }): unknown;
    convertData(type: { type?: number }, value: unknown): unknown;
    TCLIService_types: { TTypeId: { DECIMAL_TYPE: number } };
    getValue(): Row[] | null;
  };
  result.convertBigInt = (value) => BigInt.asIntN(64, BigInt(`0x${value.toOctetString()}`));
  const convert = result.convertData.bind(result);
  const decimalType = result.TCLIService_types.TTypeId.DECIMAL_TYPE;
  result.convertData = (type, value) => (type.type === decimalType ? String(value) : convert(type, value));
  return result.getValue() ?? [];
}

async function* fetched(s: Session, target: HiveTarget, asked: ReadRequest): AsyncGenerator<Row[]> {
  const request = checkColumns(await describe(s, target), asked);
  const operation = await run(s, hiveSelect(target.database, target.table, request));
  operation.setMaxRows(request.batchSize);
  do {
    request.signal.throwIfAborted();
    await s.guard(operation.fetch());
    const rows = exactRows(s, operation);
    operation.flush();
    if (rows.length > 0)
      yield rows.map((row) =>
        Object.fromEntries(Object.entries(row).map(([k, v]) => [k.replace(/^.*\./, ''), jsonSafe(v)])),
      );
  } while (operation.hasMoreRows());
  await s.guard(operation.close());
}

function thriftSource(target: HiveTarget): Source {
  return {
    async schema() {
      let s: Session | undefined;
      try {
        s = await session(target);
        return await describe(s, target);
      } catch (error) {
        throw classify(error);
      } finally {
        await s?.close();
      }
    },
    read: (request) =>
      abortableRead(
        request.signal,
        () => session(target),
        (s) => s.close(),
        // Filters and the limit ran in HiveServer2; only the offset is skipped here.
        (s) => scanBatches(fetched(s, target, request), { ...request, filters: {} }),
        classify,
      ),
  };
}

/** `endpointHosts`: as s3Sources', for a layout in object storage. */
export function hiveSources(
  roots: readonly string[],
  secrets: () => SecretReader | undefined,
  endpointHosts: readonly string[] = [],
): SourceFactory {
  const isThrift = (input: SourceInput) => text(input.properties.host) !== undefined;
  return {
    platforms: ['hive'],
    // Columns, filters (partition pruning too), offset, limit and batch_size narrow a table or layout; no option does.
    readerOptions: {},
    describe(input) {
      if (isThrift(input)) return { path: null, format: 'table' };
      const location = text(input.properties.location) ?? text(input.properties.path) ?? null;
      return { path: location, format: input.formatHint ?? 'hive-partitioned' };
    },
    create(input) {
      if (isThrift(input)) return thriftSource(hiveTarget(input, secrets()));
      return hivePartitionSource(input, roots, secrets(), endpointHosts);
    },
  };
}
