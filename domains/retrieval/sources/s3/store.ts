/**
 * Where an object-storage dataset lives and how to sign for it
 * (platform `s3`): endpoint and region from the dataset properties (`region`,
 * `endpoint`, `endpoint_url`, `endpoint_override`), keys from a catalog
 * secret (`properties.secret_urn`, JSON with `aws_access_key_id`,
 * `aws_secret_access_key`, optional `aws_session_token`, `region`,
 * `endpoint…`) or from the job's `credential_override` (same JSON keys), in
 * that rising order: per-request overrides beat catalog metadata.
 * Stored keys go only to the dataset's own endpoint: an override that names
 * an endpoint, or any key, brings a complete key pair of its own, and then
 * no stored key (nor session token) is sent with it. Nor does an override
 * make the gateway connect where its caller likes: an endpoint it names must
 * be the dataset's own host, or one the operator lists
 * (`retrieval.endpointHosts.s3`), else 422 `endpoint_not_allowed` before any
 * connection.
 * The SDK's default credential chain is never used, so a dataset cannot make
 * the gateway sign with its own environment's identity; `properties.anonymous:
 * true` sends unsigned requests. Key material is never logged or put in an error.
 */
import { Readable } from 'node:stream';
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { AsyncBuffer } from 'hyparquet';
import { RetrievalErrors } from '../../errors.ts';
import { abortableRead } from '../abortable.ts';
import { revealSecret, SECRET_PREFIX, type SecretReader } from '../credentials.ts';
import { lazyModule } from '../lazy.ts';
import { credentialFields } from '../reader-options.ts';
import type { Row, SourceInput } from '../types.ts';
import type { ObjectEntry, ObjectStore } from './formats.ts';

const s3Sdk = lazyModule('S3', () => import('@aws-sdk/client-s3'));
type S3Sdk = Awaited<ReturnType<typeof s3Sdk>>;

export interface S3Location {
  readonly bucket: string;
  /** An object key, or a prefix when it ends with `/` (or names no object). */
  readonly key: string;
}

type Settings = Record<string, unknown>;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** `bucket/key` from `properties.path`/`location` (`s3://` allowed) or the URN name. */
export function s3Location(input: SourceInput): S3Location {
  const raw = text(input.properties.path) ?? text(input.properties.location) ?? input.name;
  const bare = raw.replace(/^s3a?:\/\//, '').replace(/^\/+/, '');
  const slash = bare.indexOf('/');
  const bucket = slash < 0 ? bare : bare.slice(0, slash);
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw RetrievalErrors.make.dataset_location_missing();
  return { bucket, key: slash < 0 ? '' : bare.slice(slash + 1) };
}

function parseJson(value: string, what: string): Settings {
  try {
    const parsed = JSON.parse(value);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Settings;
  } catch {
    // reported below without the value
  }
  throw RetrievalErrors.make.source_credentials_missing({ problem: `${what} is not a JSON object` });
}

function fromSecret(input: SourceInput, secrets: SecretReader | undefined): Settings {
  const urn = text(input.properties.secret_urn);
  if (!urn) return {};
  if (!urn.startsWith(SECRET_PREFIX))
    throw RetrievalErrors.make.source_credentials_missing({ problem: 'secret not readable', secret_urn: urn });
  return parseJson(revealSecret(secrets, urn), 'the secret');
}

const endpointOf = (s: Settings) => text(s.endpoint_override) ?? text(s.endpoint_url) ?? text(s.endpoint);
const KEY_FIELDS = ['aws_access_key_id', 'aws_secret_access_key', 'aws_session_token'] as const;
const OVERRIDE_FIELDS = [...KEY_FIELDS, 'region', 'endpoint', 'endpoint_url', 'endpoint_override'];

/** The job's override: its own complete key pair whenever it names an endpoint or any key. */
function fromOverride(raw: string | null): Settings {
  if (raw === null) return {};
  const override = credentialFields(raw, OVERRIDE_FIELDS, 's3');
  if (!override)
    throw RetrievalErrors.make.source_credentials_missing({ problem: 'credential_override is not a JSON object' });
  const complete = text(override.aws_access_key_id) !== undefined && text(override.aws_secret_access_key) !== undefined;
  const wants = endpointOf(override) !== undefined || KEY_FIELDS.some((k) => override[k] !== undefined);
  if (wants && !complete) {
    throw RetrievalErrors.make.credential_override_incomplete({
      problem: 'an endpoint or key in credential_override needs its own aws_access_key_id and aws_secret_access_key',
    });
  }
  return override;
}

/** The endpoint parsed; null when it is not an http(s) URL or carries credentials in it (`user:pass@`). */
function endpointUrl(endpoint: string): URL | null {
  if (!/^https?:\/\/[^\s/]+/i.test(endpoint)) return null;
  try {
    const url = new URL(endpoint);
    return url.username || url.password ? null : url;
  } catch {
    return null;
  }
}

/**
 * The endpoint to connect to: the override's, when it is the dataset's own (the same scheme, host, port and path: a
 * plaintext port or another path of that host is not it) or names a host the operator listed; else the dataset's.
 * Decided before any client exists, so a refused endpoint is never connected to.
 */
function allowedEndpoint(own: string | undefined, override: Settings, endpointHosts: readonly string[]) {
  const endpoint = endpointOf(override) ?? own;
  if (endpoint === undefined) return undefined;
  const url = endpointUrl(endpoint);
  if (url === null) throw RetrievalErrors.make.dataset_location_missing();
  if (endpoint === own) return endpoint;
  const ownUrl = endpointUrl(own ?? '');
  const isOwn = ownUrl !== null && url.origin === ownUrl.origin && url.pathname === ownUrl.pathname;
  const host = url.host.toLowerCase();
  if (!isOwn && !endpointHosts.includes(host)) throw RetrievalErrors.make.endpoint_not_allowed({ host });
  return endpoint;
}

/**
 * S3 client configuration for the dataset and the job's override. `endpointHosts`: the hosts (lower-cased `host` or
 * `host:port`) an override may name besides the dataset's own.
 */
export function s3Config(
  input: SourceInput,
  secrets: SecretReader | undefined,
  endpointHosts: readonly string[] = [],
): S3ClientConfig {
  const override = fromOverride(input.credentialOverride);
  const secret = fromSecret(input, secrets);
  const pick = (layers: Settings[], get: (s: Settings) => string | undefined) =>
    layers.reduce<string | undefined>((found, layer) => get(layer) ?? found, undefined);
  const endpoint = allowedEndpoint(pick([input.properties as Settings, secret], endpointOf), override, endpointHosts);
  // The key pair and session token come from one place, never mixed: the override's, else the secret's.
  const keys = text(override.aws_access_key_id) ? override : secret;
  const accessKeyId = text(keys.aws_access_key_id);
  const secretAccessKey = text(keys.aws_secret_access_key);
  const sessionToken = text(keys.aws_session_token);
  const config: S3ClientConfig = {
    region: pick([input.properties as Settings, secret, override], (s) => text(s.region)) ?? 'us-east-1',
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    maxAttempts: 2,
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 60_000 },
  };
  if (accessKeyId && secretAccessKey)
    config.credentials = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
  else if (input.properties.anonymous === true) config.signer = { sign: async (request) => request };
  else
    throw RetrievalErrors.make.source_credentials_missing({
      problem: 'no access key (secret_urn or credential_override)',
    });
  return config;
}

/** A failure as an ApiError whose message says what happened, never with a key or a signature. */
export function classifyS3(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  if (e.name === 'NoSuchKey' || e.name === 'NoSuchBucket' || e.name === 'NotFound')
    return RetrievalErrors.make.source_not_found({ problem: 'no such object' });
  if (
    status === 403 ||
    e.name === 'InvalidAccessKeyId' ||
    e.name === 'SignatureDoesNotMatch' ||
    e.name === 'AccessDenied'
  ) {
    return RetrievalErrors.make.source_unavailable({ problem: 'object storage refused the credentials' });
  }
  return RetrievalErrors.make.source_unavailable({
    problem: status ? `object storage answered ${status}` : 'object storage unreachable or the read broke off',
  });
}

/** A key as the prefix of the objects "in" it: '' (the whole bucket) and `a/` stay, `a` becomes `a/`. */
export function folderPrefix(key: string): string {
  return key === '' || key.endsWith('/') ? key : `${key}/`;
}

/** A store opened for one schema call or one read, and how to let it go. */
export interface OpenedStore {
  readonly store: ObjectStore;
  readonly close: () => void;
}

/** One call on a store opened for it alone: closed afterwards, a failure mapped to an ApiError. */
export async function withOpenedStore<S extends OpenedStore, T>(
  open: () => Promise<S>,
  use: (opened: S) => Promise<T>,
): Promise<T> {
  const opened = await open();
  try {
    return await use(opened);
  } catch (error) {
    throw classifyS3(error);
  } finally {
    opened.close();
  }
}

/** A read from a store opened for it alone: closed when the read ends or aborts (abortable.ts), failures classified. */
export function readOpenedStore<S extends OpenedStore>(
  signal: AbortSignal,
  open: () => Promise<S>,
  batches: (opened: S) => AsyncIterable<Row[]>,
) {
  return abortableRead(signal, open, (opened) => opened.close(), batches, classifyS3);
}

/** An ObjectStore over one bucket with a client of its own, which `close` destroys. */
export async function openS3Store(config: S3ClientConfig, bucket: string): Promise<OpenedStore> {
  const sdk = await s3Sdk();
  const client = new sdk.S3Client(config);
  return { store: s3Store(sdk, client, bucket), close: () => client.destroy() };
}

type Call = <T>(send: () => Promise<T>) => Promise<T>;
type GetObject = (key: string, signal: AbortSignal, range?: string) => Promise<{ Body?: unknown }>;

function s3Store(
  { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command }: S3Sdk,
  client: S3Client,
  bucket: string,
): ObjectStore {
  const call: Call = async (send) => {
    try {
      return await send();
    } catch (error) {
      throw classifyS3(error);
    }
  };
  const get: GetObject = (key, signal, range) =>
    call(() => client.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: range }), { abortSignal: signal }));
  return {
    async *list(prefix, signal) {
      let token: string | undefined;
      do {
        const page = await call(() =>
          client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }), {
            abortSignal: signal,
          }),
        );
        for (const o of page.Contents ?? [])
          if (o.Key && !o.Key.endsWith('/')) yield { key: o.Key, size: Number(o.Size ?? 0) };
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },
    async stat(key, signal) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
        return { key, size: Number(head.ContentLength ?? 0) };
      } catch (error) {
        const failure = classifyS3(error);
        if ((failure as { reason?: string }).reason === 'source_not_found') return null;
        throw failure;
      }
    },
    open: async (key, signal) => rethrowing((await get(key, signal)).Body as Readable),
    ranged: (entry, signal) => rangedBuffer(entry, signal, get, call),
  };
}

// A body that breaks off mid-stream (server gone) surfaces as a classified error, not the socket's text.
function rethrowing(body: Readable): Readable {
  const out = new Readable({ read: () => body.resume() });
  body.on('data', (chunk) => {
    if (!out.push(chunk)) body.pause();
  });
  body.once('end', () => out.push(null));
  body.once('error', (error) => out.destroy(classifyS3(error)));
  out.once('close', () => body.destroy());
  return out;
}

/** hyparquet's AsyncBuffer over ranged GetObject: each slice is one `Range: bytes=a-b` request. */
function rangedBuffer(entry: ObjectEntry, signal: AbortSignal, get: GetObject, call: Call): AsyncBuffer {
  return {
    byteLength: entry.size,
    async slice(start, end = entry.size) {
      const got = await get(entry.key, signal, `bytes=${start}-${end - 1}`);
      const bytes = await call(() =>
        (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray(),
      );
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}
