/**
 * The Hive source (platform `hive`; options [I] `host`,
 * `port`, `database`, `table`, `auth`). With a `host` it reads a table from
 * HiveServer2 over Thrift (hive-driver): the schema from `DESCRIBE`, then
 * one `SELECT` with the columns, the filters (IN / IS NULL) and a LIMIT
 * pushed into HiveQL, escaped (hive-sql.ts) after every name was checked
 * against the schema; rows are fetched `batchSize` at a time. Without a host
 * but with a `location`/`path`, it reads a Hive-partitioned directory layout
 * (hive-partitions.ts). Auth `NOSASL` (default) or `PLAIN` (SASL with
 * user/password from `secret_urn` or `credential_override` JSON). With
 * `ssl: true` the Thrift connection is TLS (HiveServer2's
 * `hive.server2.use.SSL`), the chain verified against `ssl_ca_pem` (PEM or a
 * catalog secret; else the default CA store) and the host name always
 * checked: hive-driver's own default would accept any certificate.
 */
import type { HiveClient } from 'hive-driver';
import { RetrievalErrors } from '../errors.ts';
import { abortableRead } from './abortable.ts';
import { hivePartitionSource } from './hive-partitions.ts';
import { hiveIdentifier, hiveSelect } from './hive-sql.ts';
import { lazyModule } from './lazy.ts';
import { revealSecret, type SecretReader, USER_PASSWORD_FIELDS } from './pg-connection.ts';
import { credentialFields, jsonObject } from './reader-options.ts';
import { checkColumns, jsonSafe, scanBatches } from './scan.ts';
import { caBundle, tlsProblem } from './tls-trust.ts';
import type { ReadRequest, Row, SchemaField, Source, SourceFactory, SourceInput } from './types.ts';

interface HiveTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly table: string;
  readonly auth: 'NOSASL' | 'PLAIN';
  readonly user?: string;
  readonly password?: string;
  /** tls.connect options when `ssl` is set; verification is never off. */
  readonly tls: { ca?: string; rejectUnauthorized: true } | null;
}

/** hive-driver's transport as an authentication sees it: the socket it opens. */
type Transport = Parameters<InstanceType<typeof import('hive-driver').auth.NoSaslAuthentication>['authenticate']>[0];
/** From the first byte sent to an open session. */
const CONNECT_TIMEOUT_MS = 10_000;
type Operation = Awaited<ReturnType<Awaited<ReturnType<HiveClient['openSession']>>['executeStatement']>>;
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
// Named exports: under tsx's loader a dynamic import of this CommonJS (`__esModule`) package has no `default`.
const hiveDriver = lazyModule('Hive', () => import('hive-driver'));

function credentials(input: SourceInput, secrets: SecretReader | undefined): { user?: string; password?: string } {
  const urn = text(input.properties.secret_urn);
  const raw = input.credentialOverride || (urn ? revealSecret(secrets, urn) : undefined);
  if (!raw) return {};
  const parsed = jsonObject(raw);
  if (!parsed)
    throw RetrievalErrors.make.source_credentials_missing({ problem: 'credentials are not {"user","password"} JSON' });
  return { user: text(parsed.user) ?? text(parsed.username), password: text(parsed.password) };
}

function hiveTarget(input: SourceInput, secrets: SecretReader | undefined): HiveTarget {
  const p = input.properties;
  // A caller's override holds a user and password only, whatever the auth: the host stays the dataset's.
  if (input.credentialOverride) credentialFields(input.credentialOverride, USER_PASSWORD_FIELDS, 'hive');
  const host = text(p.host) as string;
  const port = Number(p.port ?? 10000);
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw RetrievalErrors.make.source_options_invalid({ option: 'port', problem: 'a TCP port' });
  const [first, second] = (text(p.table) ?? input.name).split('.');
  const database = text(p.database) ?? (second ? first : undefined) ?? 'default';
  const table = (second ?? first) as string;
  const auth = String(p.auth ?? 'NOSASL').toUpperCase();
  if (auth !== 'NOSASL' && auth !== 'PLAIN' && auth !== 'NONE')
    throw RetrievalErrors.make.source_options_invalid({ option: 'auth', problem: 'NOSASL or PLAIN' });
  const { user, password } = auth === 'NOSASL' ? {} : credentials(input, secrets);
  if (auth !== 'NOSASL' && !user)
    throw RetrievalErrors.make.source_credentials_missing({ problem: 'PLAIN auth needs a user' });
  const tls = hiveTls(p, secrets);
  return { host, port, database, table, auth: auth === 'NOSASL' ? 'NOSASL' : 'PLAIN', user, password, tls };
}

function hiveTls(p: SourceInput['properties'], secrets: SecretReader | undefined): HiveTarget['tls'] {
  const ssl = p.ssl ?? false;
  const invalid = (option: string, problem: string) => RetrievalErrors.make.source_options_invalid({ option, problem });
  if (typeof ssl !== 'boolean') throw invalid('ssl', 'a boolean');
  // A CA the connection would silently not use: the owner meant TLS.
  if (!ssl && p.ssl_ca_pem !== undefined) throw invalid('ssl_ca_pem', 'set ssl: true to use it');
  if (!ssl) return null;
  const ca = caBundle(p.ssl_ca_pem, secrets, 'ssl_ca_pem');
  // Explicit: hive-driver's TLS transport defaults to rejectUnauthorized false.
  // One PEM text: hive-driver's options type takes no list (tls.connect reads every certificate in it).
  return { ...(ca ? { ca: ca.join('\n') } : {}), rejectUnauthorized: true };
}

function classify(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const tls = tlsProblem(error);
  if (tls) return RetrievalErrors.make.source_tls_failed({ problem: tls });
  // hive-driver's AuthenticationError (not exported): the server answered the SASL exchange with a failure.
  if (error instanceof Error && error.message.startsWith('Authentication error')) {
    return RetrievalErrors.make.source_auth_failed({ problem: 'sasl authentication failed' });
  }
  // hive-driver's StatusError carries HiveServer2's status (errorMessage, sqlState) beside its message.
  const text = (error as { message?: unknown })?.message ?? '';
  const message = `${text} ${JSON.stringify(error, Object.getOwnPropertyNames(error ?? {})) ?? ''}`;
  if (/Table not found|Database does not exist|does not exist|Error 10001/i.test(message))
    return RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  return RetrievalErrors.make.source_unavailable({
    problem: 'hiveserver2 unreachable, refused the query, or the read broke off',
  });
}

async function session(target: HiveTarget) {
  const hive = await hiveDriver();
  const { TCLIService, TCLIService_types } = hive.thrift;
  const auth =
    target.auth === 'PLAIN'
      ? new hive.auth.PlainTcpAuthentication({ username: target.user as string, password: target.password ?? '' })
      : new hive.auth.NoSaslAuthentication();
  const client = new hive.HiveClient(TCLIService, TCLIService_types);
  // Thrift leaves calls pending forever when the socket closes: every call races the connection's end.
  let fail: (error: unknown) => void = () => {};
  const lost = new Promise<never>((_, reject) => {
    fail = reject;
    // The socket's own error, so a TLS failure is told apart from a dropped connection.
    client.on('error', (error: unknown) => reject(error ?? new Error('connection error')));
    client.on('close', () => reject(new Error('connection closed')));
    client.on('timeout', () => reject(new Error('connection timed out')));
  });
  lost.catch(() => {});
  const guard = <T>(call: Promise<T>): Promise<T> => Promise.race([call, lost]);
  const options = { connect_timeout: 10_000, timeout: 60_000, ...(target.tls ? { ssl: true, ...target.tls } : {}) };
  // The SASL exchange has no timeout of its own: a server that does not answer it (one without SASL,
  // or a stalled one) would hold the read forever. The transport is kept to close it at the deadline.
  let transport: Transport | undefined;
  const tracked = {
    authenticate(opened: Transport) {
      transport = opened;
      return auth.authenticate(opened);
    },
  };
  const deadline = setTimeout(() => {
    fail(new Error('connection timed out'));
    transport?.getTransport()?.destroy();
  }, CONNECT_TIMEOUT_MS);
  try {
    await guard(
      client.connect({ host: target.host, port: target.port, options }, new hive.connections.TcpConnection(), tracked),
    );
    const opened = await guard(
      client.openSession({ client_protocol: TCLIService_types.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10 }),
    );
    return { client, opened, guard, utils: new hive.HiveUtils(TCLIService_types) };
  } finally {
    clearTimeout(deadline);
  }
}

type Session = Awaited<ReturnType<typeof session>>;

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
 * hive-driver's JSON rows with BIGINT read exactly: its handler reads an i64
 * with node-int64's toNumber(), which rounds past 2^53. As a bigint,
 * jsonSafe gives a wide value as its digits (as for a Parquet INT64).
 */
function exactRows(s: Session, operation: Parameters<Session['utils']['getResult']>[0]): Row[] {
  const result = s.utils.getResult(operation) as unknown as {
    convertBigInt(value: { toOctetString(): string }): unknown;
    getValue(): Row[] | null;
  };
  result.convertBigInt = (value) => BigInt.asIntN(64, BigInt(`0x${value.toOctetString()}`));
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
        s?.client.close();
      }
    },
    read: (request) =>
      abortableRead(
        request.signal,
        () => session(target),
        (s) => s.client.close(),
        // Filters and the limit ran in HiveServer2; only the offset is skipped here.
        (s) => scanBatches(fetched(s, target, request), { ...request, filters: {} }),
        classify,
      ),
  };
}

export function hiveSources(roots: readonly string[], secrets: () => SecretReader | undefined): SourceFactory {
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
      return hivePartitionSource(input, roots, secrets());
    },
  };
}
