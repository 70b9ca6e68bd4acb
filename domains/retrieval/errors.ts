/** Reasons of the retrieval service and dataset gates. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const RetrievalErrors = defineErrors('retrieval', {
  retrieval_job_not_found: { status: 404, doc: 'No retrieval job with that id belongs to the caller (a native administrator sees every job).' },
  retrieval_job_canceled: { status: 409, doc: 'The job was canceled; it cannot be streamed any more.' },
  inline_threshold_exceeded: {
    status: 422,
    doc: 'The result is larger than the inline threshold (`retrieval.inlineThresholdBytes`, 1 MiB of JSON by default); use `transport` `sse`, `grpc` or `auto`.',
  },
  source_unsupported: { status: 422, doc: "No retrieval source serves the dataset's `platform` (or its file format)." },
  dataset_location_missing: {
    status: 400,
    doc: 'The dataset has no `properties.path`/`location` (or Postgres connection properties) to read from.',
    stringDetail: 'Dataset is missing a location property',
  },
  path_not_allowed: {
    status: 403,
    doc: 'The dataset path is outside the allowed roots (`PLATFORM_RETRIEVAL_FS_ROOTS`), holds `..`, or passes through a symbolic link.',
  },
  source_not_found: { status: 404, doc: 'The file (or table) the dataset names does not exist.' },
  unknown_column: { status: 422, doc: 'A requested column or filter key is not in the source schema; `column` names it.' },
  filter_value_invalid: {
    status: 422,
    doc: "A filter value cannot be read as its column's type (`\"abc\"` for an integer column, a malformed date), or the column's type has no equality (`json`, `point`); `problem` gives the source's error class.",
  },
  row_too_large: {
    status: 422,
    doc: 'A source row is longer than retrieval takes (`max_row_bytes`, 16 MiB of Postgres COPY text); select fewer columns.',
  },
  source_unavailable: {
    status: 502,
    doc: 'The source could not be reached or refused the read (connection, authentication); the message never holds credentials.',
  },
  source_access_denied: {
    status: 403,
    doc: "The dataset's credentials may not read the table or a selected column (Postgres SQLSTATE 42501); the message never names the user.",
  },
  source_credentials_missing: { status: 400, doc: 'The Postgres dataset names no user, or its secret or `credential_override` is not usable.' },
  source_options_invalid: {
    status: 422,
    doc: 'A source option (`options.*` or a dataset property: Kafka offsets, Slack channels, Hive partitions, Postgres `sslmode`/`sslrootcert` …) is malformed; `option` names it (docs/sources.md, docs/retrieval.md).',
  },
  option_not_allowed: {
    status: 422,
    doc: 'A reader\'s `options` key (or `credential_override` field) is not one the dataset\'s source takes from a reader, or its value reaches beyond the dataset (a partition or channel the dataset does not list, a setting the dataset fixes); `key` and `source` name them. A read narrows a dataset, never re-targets it (docs/retrieval.md, "Reader options").',
  },
  credential_override_incomplete: {
    status: 422,
    doc: "A `credential_override` names an endpoint, or part of a key pair, without its own complete credentials: the dataset's stored credentials are only ever sent to the dataset's own endpoint.",
  },
  grpc_token_invalid: { status: 401, doc: 'The gRPC stream token is missing, malformed, expired, or bound to another job (Connect code UNAUTHENTICATED).' },
  dataset_not_found: { status: 404, doc: 'Gate binding on a URN the caller cannot see, or no such dataset.' },
});
