/**
 * The one interface every retrieval source implements: typed schema discovery, then row batches read with the
 * request's columns, filters, limit and offset pushed down where the source
 * can, cancelled through an AbortSignal. Each source (PostgreSQL, S3, Kafka,
 * Hive, Slack, ...) adds a factory to the registry and run the contract suite in
 * test/contract/source.contract.ts.
 */
import type { IpcMessage } from '../arrow/ipc.ts';
import type { ReaderOptionTable } from './reader-options.ts';

export type Row = Record<string, unknown>;

/**
 * A batch of rows already encoded: one JSON array `[row,row,…]` as UTF-8
 * bytes, and where each row's text ends, so a batch can be split by rows
 * without parsing it.
 */
export interface JsonRows {
  readonly json: Buffer;
  /** Offset just past each row's text (the `,` or `]` after it); its length is the row count. */
  readonly ends: readonly number[];
}

/** A filter value: a scalar means equality, a list means IN (the filter form public clients send). */
export type FilterValue = string | number | boolean | null | readonly (string | number | boolean | null)[];

/**
 * One slice of a read split for reading in parallel (an Arrow Flight
 * endpoint each): a range of a position the source defines (PostgreSQL: heap
 * pages), `to` excluded; null = to the end, so rows added since the split are read.
 */
export interface ReadRange {
  readonly from: number;
  readonly to: number | null;
}

/** How far a read may be split: at most `flightEndpointsMax` slices, each of at least `flightEndpointMinPages`. */
export interface SplitLimits {
  readonly flightEndpointsMax: number;
  readonly flightEndpointMinPages: number;
}

export interface ReadRequest {
  /** Columns to return, in this order; null = every column. */
  readonly columns: readonly string[] | null;
  /**
   * Those of `columns` that a per-record gate added, not the caller: read
   * where the dataset has them, otherwise left out without an error, so
   * that an `unknown_column` never names a field the caller did not
   * (it would reveal the gate's configuration). Rows without the field
   * reach the gate without it, and it withholds them (fails closed).
   */
  readonly gateColumns?: readonly string[];
  /** AND of equalities; an empty object = no filter. */
  readonly filters: Readonly<Record<string, FilterValue>>;
  readonly offset: number;
  /** Most rows to return; null = all. */
  readonly limit: number | null;
  /** Rows per yielded batch (a source may yield fewer, never more). */
  readonly batchSize: number;
  /** Only the rows in this slice (`ranges()`); absent = all. */
  readonly range?: ReadRange;
  readonly signal: AbortSignal;
}

export interface SchemaField {
  readonly name: string;
  /** Source type name (`text`, `int8`, `string`, `INT64`, ...). */
  readonly type: string;
}

export interface Source {
  /** Typed schema for the catalog and for validating columns and filters. */
  schema(signal: AbortSignal): Promise<SchemaField[]>;
  /** Row batches; stops reading the underlying source when the signal aborts or iteration is left. */
  read(request: ReadRequest): AsyncIterable<Row[]>;
  /**
   * Optional: the rows `read()` would give, in the same order and batches of
   * at most batchSize, each batch already its JSON array's bytes, for
   * sources that can encode JSON without row objects (Postgres): an ungated
   * stream sends those bytes as they are (pipeline.ts).
   */
  readJson?(request: ReadRequest): AsyncIterable<JsonRows>;
  /**
   * Optional: the same rows as Arrow IPC messages (schema first, then record
   * batches) built column by column, for sources that can type their columns
   * without row objects (Postgres): an ungated Arrow Flight stream sends them.
   */
  readArrow?(request: ReadRequest): AsyncIterable<IpcMessage>;
  /**
   * Optional: the read split into at most `limits` ranges that together hold
   * every row, one per parallel reader, for a source that can read a slice of
   * its table on its own (PostgreSQL); fewer than two when the read is too
   * small to split or cannot be.
   */
  ranges?(request: Pick<ReadRequest, 'columns' | 'filters'>, limits: SplitLimits): Promise<ReadRange[]>;
}

/** What a source is built from: the dataset's catalog record plus the job's source-specific inputs. */
export interface SourceInput {
  readonly urn: string;
  readonly platform: string;
  /** URN name part (`orders`, `/srv/x.csv`, `bucket/key`). */
  readonly name: string;
  readonly properties: Readonly<Record<string, unknown>>;
  /** The reader's options, already checked against the factory's `readerOptions` (reader-options.ts). */
  readonly options: Readonly<Record<string, unknown>>;
  readonly credentialOverride: string | null;
  readonly formatHint: string | null;
  /** Tag for the source's connections (Postgres application_name), to observe one job's reads. */
  readonly tag: string;
}

export interface SourceFactory {
  /** Dataset `platform` values this factory serves. */
  readonly platforms: readonly string[];
  /** The `options` keys a reader may set, and how each narrows the dataset; every other key is refused. */
  readonly readerOptions: ReaderOptionTable;
  /** Validates the inputs and builds the source; throws an ApiError (4xx) on bad configuration. */
  create(input: SourceInput): Promise<Source> | Source;
  /** Format and location summary for the job's `dataset` block. */
  describe(input: SourceInput): { path: string | null; format: string | null };
}
