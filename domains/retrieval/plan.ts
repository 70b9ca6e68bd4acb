/**
 * From a job's stored request and its dataset to a ReadPlan: the source
 * for the dataset's platform, the bound gate (stored in
 * `properties.gate`) evaluated with the caller's attributes, and
 * the columns the gate needs read alongside the caller's.
 */
import type { Principal } from '../../gateway/principal.ts';
import { RetrievalErrors } from './errors.ts';
import { type GateRunner, runnerFor } from './gates/runner.ts';
import type { GateBinding } from './gates/types.ts';
import { type ReadPlan, sourceColumns } from './pipeline.ts';
import { readerOptions } from './sources/reader-options.ts';
import type { ReadRange, Source, SourceFactory, SourceInput } from './sources/types.ts';
import type { DatasetBlock, StoredRequest } from './wire.ts';

/** What retrieval needs of a catalog dataset. */
export interface DatasetRecord {
  readonly urn: string;
  readonly platform: string;
  readonly name: string;
  readonly properties: Readonly<Record<string, unknown>>;
}

/** Dataset lookup with the catalog's ReBAC rules: viewer or higher, else 404. */
export interface DatasetReader {
  get(principal: Principal, urn: string): DatasetRecord;
  /**
   * The same, for reading the dataset's data: secret references come bound to
   * the secret the owner chose (what SECRETS.reveal takes), or the catalog
   * refuses with 409 secret_unavailable.
   */
  forUse(principal: Principal, urn: string): DatasetRecord;
}

export class SourceRegistry {
  constructor(private readonly factories: readonly SourceFactory[]) {}

  for(platform: string): SourceFactory {
    const factory = this.factories.find((f) => f.platforms.includes(platform.toLowerCase()));
    if (!factory) throw RetrievalErrors.make.source_unsupported({ platform });
    return factory;
  }
}

/**
 * What the factory builds the job's source from. The reader's options pass
 * the factory's table here, on creation and on every stream of a stored
 * job alike, so no transport or caller reaches a source around it.
 */
export function sourceInput(
  factory: SourceFactory,
  dataset: DatasetRecord,
  request: StoredRequest,
  credentialOverride: string | null,
  tag: string,
): SourceInput {
  return {
    urn: dataset.urn,
    platform: dataset.platform,
    name: dataset.name,
    properties: dataset.properties,
    options: readerOptions(
      factory.readerOptions,
      factory.platforms[0] ?? dataset.platform,
      request.options,
      dataset.properties,
    ),
    credentialOverride,
    formatHint: request.format_hint,
    tag,
  };
}

export function datasetBlock(dataset: DatasetRecord, factory: SourceFactory, input: SourceInput): DatasetBlock {
  const { path, format } = factory.describe(input);
  return { urn: dataset.urn, platform: dataset.platform, path, format, estimated_bytes: null, estimated_rows: null };
}

export function gateBindingOf(dataset: DatasetRecord): GateBinding | null {
  const gate = dataset.properties.gate as { type?: unknown; config?: unknown } | undefined;
  if (!gate || typeof gate !== 'object' || typeof gate.type !== 'string') return null;
  const config = gate.config && typeof gate.config === 'object' ? (gate.config as Record<string, unknown>) : {};
  return { type: gate.type, config };
}

export interface PlanInputs {
  readonly source: Source;
  readonly dataset: DatasetRecord;
  readonly request: StoredRequest;
  readonly principal: Principal;
  readonly signal: AbortSignal;
  readonly onViolation: (problem: string) => void;
  /** An Arrow Flight endpoint's slice of the read; absent = all of it. */
  readonly range?: ReadRange | null;
}

export function readPlan(inputs: PlanInputs): ReadPlan {
  const binding = gateBindingOf(inputs.dataset);
  const gate: GateRunner | null = binding ? runnerFor(binding, inputs.principal.attributes) : null;
  const { request } = inputs;
  return {
    source: inputs.source,
    gate,
    onViolation: inputs.onViolation,
    request: {
      ...sourceColumns(request.columns, gate),
      filters: request.filters,
      offset: request.offset,
      limit: request.limit_rows,
      batchSize: request.batch_size,
      ...(inputs.range ? { range: inputs.range } : {}),
      signal: inputs.signal,
    },
  };
}
