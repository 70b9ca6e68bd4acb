/** Reasons of the retrieval service and dataset gates. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const RetrievalErrors = defineErrors('retrieval', {
  retrieval_job_not_found: {
    status: 404,
    message: 'No such retrieval job belongs to you.',
    doc: 'No retrieval job with that id belongs to the caller (a native administrator sees every job).',
  },
  retrieval_stream_on_other_node: {
    status: 409,
    message: "The job's stream is served by the cluster node that created it.",
    doc:
      'The job was created with a `credential_override`, which only the memory of the cluster node that created it ' +
      'holds: stream it there (the SSE route answers a redirect to it; the gRPC block names its address).',
  },
  retrieval_override_lost: {
    status: 410,
    message: "The cluster node holding the job's credential override stopped; create the job again.",
    doc:
      'The job was created with a `credential_override` on a cluster node that has stopped answering: the override ' +
      'was never stored, so no node can read with it. Create the job again.',
  },
  retrieval_job_canceled: {
    status: 409,
    message: 'The retrieval job was canceled.',
    doc: 'The job was canceled; it cannot be streamed any more.',
  },
  retrieval_reader_disabled: {
    status: 401,
    message: 'The user reading this stream was disabled or deleted; the stream ended.',
    doc:
      'The user reading the stream (for a gRPC or Arrow Flight stream, the user its token was issued to) was ' +
      'disabled or deleted while it was open: the stream ends with this reason within the change feed bound.',
  },
  inline_threshold_exceeded: {
    status: 422,
    message: 'The result is too large to return inline; ask for the sse, grpc or auto transport.',
    doc:
      'The result is larger than the inline threshold ' +
      '(`retrieval.inlineThresholdBytes`, 1 MiB of JSON by default); use ' +
      '`transport` `sse`, `grpc` or `auto`.',
  },
  source_unsupported: {
    status: 422,
    message: "No retrieval source serves this dataset's platform or file format.",
    doc: "No retrieval source serves the dataset's `platform` (or its file format).",
  },
  dataset_location_missing: {
    status: 400,
    doc: 'The dataset has no `properties.path`/`location` (or Postgres connection properties) to read from.',
    stringDetail: 'Dataset is missing a location property',
  },
  path_not_allowed: {
    status: 403,
    message: "The dataset's path is outside the folders retrieval may read.",
    doc:
      'The dataset path is outside the allowed roots ' +
      '(`PLATFORM_RETRIEVAL_FS_ROOTS`), holds `..`, or passes through a ' +
      'symbolic link.',
  },
  source_not_found: {
    status: 404,
    message: 'The file or table the dataset names does not exist.',
    doc: 'The file (or table) the dataset names does not exist.',
  },
  unknown_column: {
    status: 422,
    message: 'A requested column or filter key is not in the source schema.',
    doc: 'A requested column or filter key is not in the source schema; `column` names it.',
  },
  filter_value_invalid: {
    status: 422,
    message: "A filter value cannot be read as its column's type.",
    doc:
      'A filter value cannot be read as its column\'s type (`"abc"` for an ' +
      "integer column, a malformed date), or the column's type has no " +
      "equality (`json`, `point`); `problem` gives the source's error class.",
  },
  row_too_large: {
    status: 422,
    message: 'A source row is too large to retrieve; select fewer columns.',
    doc:
      'A source row is longer than retrieval takes (`max_row_bytes`, 16 MiB ' +
      'of Postgres COPY text); select fewer columns.',
  },
  source_unavailable: {
    status: 502,
    message: 'The data source could not be reached or refused the read.',
    doc:
      'The source could not be reached or refused the read (connection, ' +
      'authentication); the message never holds credentials.',
  },
  source_auth_failed: {
    status: 403,
    doc:
      "The source refused the dataset's credentials (Postgres password or " +
      'pg_hba, Kafka SASL, HiveServer2 SASL PLAIN or HTTP Basic): a wrong user or password ' +
      'in its secret or `credential_override`, or a SASL mechanism the ' +
      'server does not offer. The message never holds the user or the ' +
      'password.',
  },
  source_tls_failed: {
    status: 502,
    doc:
      'TLS to the source failed: its certificate does not verify against the ' +
      "dataset's CA bundle (`sslrootcert`, `ssl_ca_pem`; else the gateway's " +
      'default CA store) or names another host (`tls verification failed`), ' +
      'the handshake broke off (`tls handshake failed`), or the server ' +
      'offers no TLS. Verification is never turned off.',
  },
  source_access_denied: {
    status: 403,
    message: "The dataset's credentials may not read this table or column.",
    doc:
      "The dataset's credentials may not read the table or a selected column " +
      '(Postgres SQLSTATE 42501); the message never names the user.',
  },
  source_credentials_missing: {
    status: 400,
    message: 'The dataset has no usable credentials for its source.',
    doc: 'The Postgres dataset names no user, or its secret or `credential_override` is not usable.',
  },
  source_options_invalid: {
    status: 422,
    message: 'A source option is malformed.',
    doc:
      'A source option (`options.*` or a dataset property: Kafka offsets, ' +
      'Slack channels, Hive partitions, Postgres `sslmode`/`sslrootcert` …) ' +
      'is malformed; `option` names it (docs/sources.md, docs/retrieval.md).',
  },
  option_not_allowed: {
    status: 422,
    message: 'This read option is not one a reader may set on this dataset.',
    doc:
      "A reader's `options` key (or `credential_override` field) is not one " +
      "the dataset's source takes from a reader, or its value reaches " +
      'beyond the dataset (a partition or channel the dataset does not list, ' +
      'a setting the dataset fixes); `key` and `source` name them. A read ' +
      'narrows a dataset, never re-targets it (docs/retrieval.md, "Reader ' +
      'options").',
  },
  credential_override_incomplete: {
    status: 422,
    message: 'A credential_override must carry complete credentials of its own.',
    doc:
      'A `credential_override` names an endpoint, or part of a key pair, ' +
      "without its own complete credentials: the dataset's stored " +
      "credentials are only ever sent to the dataset's own endpoint.",
  },
  endpoint_not_allowed: {
    status: 422,
    message: 'The credential_override names an endpoint this gateway does not connect to for this source.',
    doc:
      "A `credential_override` names an endpoint (`endpoint…`) other than the dataset's own whose host the " +
      'operator has not listed (`retrieval.endpointHosts.<source>`, `PLATFORM_RETRIEVAL_S3_ENDPOINT_HOSTS`); ' +
      '`host` names it. Nothing is sent to it (docs/sources.md).',
  },
  credential_override_not_accepted: {
    status: 422,
    message: 'This dataset takes no credential_override.',
    doc:
      'A `credential_override` on a dataset whose reads use no credentials a caller could replace: a ' +
      'filesystem dataset, or a Kafka dataset without SASL (`security_protocol` other than `SASL_SSL`). It is ' +
      'refused rather than ignored; `platform` names the source.',
  },
  grpc_token_invalid: {
    status: 401,
    message: 'The gRPC stream token is missing, invalid, expired or already used, or its user is disabled.',
    doc:
      'The gRPC stream token is missing, malformed, expired, bound to ' +
      'another job or to the other protocol, (Arrow Flight) already used, or ' +
      'issued to a user since disabled or deleted (`problem`: `user_disabled`) ' +
      "(gRPC code UNAUTHENTICATED: pyarrow's FlightUnauthenticatedError).",
  },
  flight_ticket_invalid: {
    status: 400,
    message: 'The Arrow Flight ticket is not the JSON {"job_id", "token"} of a job.',
    doc:
      'An Arrow Flight DoGet ticket is not the JSON `{"job_id", "token"}` of ' +
      "a job's `grpc` block (gRPC code INVALID_ARGUMENT: pyarrow's " +
      'ArrowInvalid).',
  },
  dataset_not_found: {
    status: 404,
    message: 'No such dataset, or you may not see it.',
    doc: 'Gate binding on a URN the caller cannot see, or no such dataset.',
  },
});
