/**
 * Where and how the Hive source reaches HiveServer2: the dataset's
 * properties read into a target (host, port, auth, TLS, transport), a
 * session opened over it, and a failure told apart as an ApiError.
 *
 * Two transports, as HiveServer2 offers them (`hive.server2.transport.mode`):
 * binary Thrift on a socket, with SASL PLAIN for a password; or Thrift over
 * HTTP POSTs to `http_path` (`hive.server2.thrift.http.path`, default
 * `cliservice`), with the password as Basic authentication on every request
 * (RFC 7617). Both go through hive-driver's connection classes. With
 * `ssl: true` either runs over TLS (HiveServer2's `hive.server2.use.SSL`),
 * the chain verified against `ssl_ca_pem` (PEM or a catalog secret; else the
 * default CA store) and the host name always checked: hive-driver's own
 * defaults would accept any certificate, on both transports. Over HTTP the
 * session is closed by a CloseSession call as the read ends, since
 * HiveServer2 keeps it past the connection (binary Thrift ends it with the socket).
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { RetrievalErrors } from '../../errors.ts';
import { revealSecret, type SecretReader, USER_PASSWORD_FIELDS } from '../credentials.ts';
import { lazyModule } from '../lazy.ts';
import { credentialFields, jsonObject } from '../reader-options.ts';
import { caBundle, tlsProblem } from '../tls-trust.ts';
import type { SourceInput } from '../types.ts';

export interface HiveTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly table: string;
  readonly auth: 'NOSASL' | 'PLAIN';
  readonly user?: string;
  readonly password?: string;
  /** tls.connect options when `ssl` is set; verification is never off. */
  readonly tls: { ca?: string; rejectUnauthorized: true } | null;
  /** Thrift over HTTP(S) POSTs to this path; null: binary Thrift. */
  readonly httpPath: string | null;
}

type HiveDriver = typeof import('hive-driver');
/** hive-driver's transport as an authentication sees it: the socket it opens, or the HTTP request options. */
type Transport = Parameters<InstanceType<HiveDriver['auth']['NoSaslAuthentication']>['authenticate']>[0];
type Authentication = { authenticate(transport: Transport): Promise<Transport> };
/** From the first byte sent to an open session. */
const CONNECT_TIMEOUT_MS = 10_000;
/** A connection silent this long while a call waits is dropped (a stalled server, a lost peer). */
const IDLE_TIMEOUT_MS = 60_000;
/** The longest wait for HiveServer2 to acknowledge a CloseSession; the connection is dropped after it either way. */
const CLOSE_TIMEOUT_MS = 2_000;
/** The first byte of a SASL frame HiveServer2 answers with: Thrift's TSaslTransport NegotiationStatus. */
const SASL_BAD = 3;
const SASL_ERROR = 4;
/** HiveServer2's defaults: `hive.server2.thrift.port`, `hive.server2.thrift.http.port`. */
const DEFAULT_PORT = { binary: 10000, http: 10001 } as const;
/** A path of URL-safe segments (RFC 3986 unreserved characters): no query, fragment, dot segment or escape. */
const HTTP_PATH = /^\/?[A-Za-z0-9_~-][A-Za-z0-9._~-]*(\/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)*$/;

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const invalid = (option: string, problem: string) => RetrievalErrors.make.source_options_invalid({ option, problem });
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

export function hiveTarget(input: SourceInput, secrets: SecretReader | undefined): HiveTarget {
  const p = input.properties;
  // A caller's override holds a user and password only, whatever the auth: the host stays the dataset's.
  if (input.credentialOverride) credentialFields(input.credentialOverride, USER_PASSWORD_FIELDS, 'hive');
  const host = text(p.host) as string;
  const httpPath = hiveHttpPath(p);
  const port = Number(p.port ?? DEFAULT_PORT[httpPath === null ? 'binary' : 'http']);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw invalid('port', 'a TCP port');
  const [first, second] = (text(p.table) ?? input.name).split('.');
  const database = text(p.database) ?? (second ? first : undefined) ?? 'default';
  const table = (second ?? first) as string;
  const { auth, user, password } = hiveAuth(input, secrets);
  const tls = hiveTls(p, secrets);
  return { host, port, database, table, auth, user, password, tls, httpPath };
}

/** `auth` and, for PLAIN (also spelled NONE), the user and password it sends. */
function hiveAuth(
  input: SourceInput,
  secrets: SecretReader | undefined,
): Pick<HiveTarget, 'auth' | 'user' | 'password'> {
  const auth = String(input.properties.auth ?? 'NOSASL').toUpperCase();
  if (auth === 'NOSASL') return { auth };
  if (auth !== 'PLAIN' && auth !== 'NONE') throw invalid('auth', 'NOSASL or PLAIN');
  const { user, password } = credentials(input, secrets);
  if (!user) throw RetrievalErrors.make.source_credentials_missing({ problem: 'PLAIN auth needs a user' });
  return { auth: 'PLAIN', user, password };
}

/** `transport` and `http_path`: the request path for HTTP, null for binary Thrift. */
function hiveHttpPath(p: SourceInput['properties']): string | null {
  const transport = p.transport ?? 'binary';
  if (transport !== 'binary' && transport !== 'http') throw invalid('transport', 'binary or http');
  // A path the connection would silently not use: the owner meant HTTP.
  if (transport === 'binary') {
    if (p.http_path !== undefined) throw invalid('http_path', 'set transport: http to use it');
    return null;
  }
  const path = p.http_path ?? 'cliservice';
  if (typeof path !== 'string' || path.length > 256 || !HTTP_PATH.test(path))
    throw invalid('http_path', 'a URL path of letters, digits and - . _ ~ segments');
  return path.startsWith('/') ? path : `/${path}`;
}

function hiveTls(p: SourceInput['properties'], secrets: SecretReader | undefined): HiveTarget['tls'] {
  const ssl = p.ssl ?? false;
  if (typeof ssl !== 'boolean') throw invalid('ssl', 'a boolean');
  // A CA the connection would silently not use: the owner meant TLS.
  if (!ssl && p.ssl_ca_pem !== undefined) throw invalid('ssl_ca_pem', 'set ssl: true to use it');
  if (!ssl) return null;
  const ca = caBundle(p.ssl_ca_pem, secrets, 'ssl_ca_pem');
  // Explicit: hive-driver's TLS transport defaults to rejectUnauthorized false.
  // One PEM text: hive-driver's options type takes no list (tls.connect reads every certificate in it).
  return { ...(ca ? { ca: ca.join('\n') } : {}), rejectUnauthorized: true };
}

/** HiveServer2 answered the SASL exchange with BAD or ERROR: it refused the user or password. */
class SaslRefused extends Error {}

/** The HTTP status of thrift's THTTPException (a POST answered other than 200; a path not served: 405). */
const httpStatus = (error: unknown): number | undefined =>
  (error as { name?: unknown })?.name === 'THTTPException' ? (error as { statusCode?: number }).statusCode : undefined;

/** Everything an error says about itself, for matching HiveServer2's messages; '' where it cannot be written. */
function described(error: unknown): string {
  try {
    const own = JSON.stringify(error, Object.getOwnPropertyNames(error ?? {}));
    return `${(error as { message?: unknown })?.message ?? ''} ${own}`;
  } catch {
    return String((error as { message?: unknown })?.message ?? '');
  }
}

export function classify(error: unknown): Error {
  if (error instanceof Error && error.name === 'ApiError') return error;
  const tls = tlsProblem(error);
  if (tls) return RetrievalErrors.make.source_tls_failed({ problem: tls });
  if (error instanceof SaslRefused)
    return RetrievalErrors.make.source_auth_failed({ problem: 'sasl authentication failed' });
  const status = httpStatus(error);
  // HiveServer2's HTTP servlet answers 401 to missing or wrong Basic credentials.
  if (status === 401 || status === 403)
    return RetrievalErrors.make.source_auth_failed({ problem: 'http authentication failed' });
  if (status !== undefined)
    return RetrievalErrors.make.source_unavailable({ problem: `hiveserver2 answered http ${status}` });
  // hive-driver's StatusError carries HiveServer2's status (errorMessage, sqlState) beside its message.
  if (/Table not found|Database does not exist|does not exist|Error 10001/i.test(described(error)))
    return RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  return RetrievalErrors.make.source_unavailable({
    problem: 'hiveserver2 unreachable, refused the query, or the read broke off',
  });
}

/** A connection to open: hive-driver's provider and options, its authentication, and a way to drop it. */
interface Link {
  connection: InstanceType<HiveDriver['connections']['TcpConnection' | 'HttpConnection']>;
  options: Record<string, unknown>;
  auth: Authentication;
  /** Closes the socket(s) now: a pending call then fails at once. */
  drop(): void;
  /**
   * Whether HiveServer2 ends the session when the connection closes: so on binary Thrift, where the socket is
   * the session's; over HTTP a session outlives its connections until `hive.server2.idle.session.timeout`.
   */
  sessionEndsWithConnection: boolean;
}

function authentication(hive: HiveDriver, target: HiveTarget): Authentication {
  const user = { username: target.user as string, password: target.password ?? '' };
  if (target.auth === 'NOSASL') return new hive.auth.NoSaslAuthentication();
  return target.httpPath === null
    ? new hive.auth.PlainTcpAuthentication(user)
    : new hive.auth.PlainHttpAuthentication(user);
}

function binaryLink(hive: HiveDriver, target: HiveTarget): Link {
  const auth = authentication(hive, target);
  // The transport is kept so the socket can be closed: the SASL exchange has no timeout of its own.
  let transport: Transport | undefined;
  return {
    connection: new hive.connections.TcpConnection(),
    options: {
      connect_timeout: CONNECT_TIMEOUT_MS,
      timeout: IDLE_TIMEOUT_MS,
      ...(target.tls ? { ssl: true, ...target.tls } : {}),
    },
    auth: {
      async authenticate(opened) {
        transport = opened;
        const answered = auth.authenticate(opened); // opens the socket
        let status: number | undefined;
        const peek = (data: Buffer) => {
          status ??= data[0];
        };
        opened.addListener('data', peek);
        try {
          return await answered;
        } catch (error) {
          // hive-driver fails on any answer but COMPLETE: only BAD or ERROR is the server refusing the
          // credentials; anything else (an HTTP port's reply, a server without SASL) is no SASL server.
          if (status === SASL_BAD || status === SASL_ERROR) throw new SaslRefused();
          throw error;
        } finally {
          opened.removeListener('data', peek);
        }
      },
    },
    drop: () => (transport?.getTransport() as Socket | undefined)?.destroy(),
    sessionEndsWithConnection: true,
  };
}

/**
 * Thrift over HTTP(S) through one keep-alive agent of the session's own: its TLS settings win over
 * the request options hive-driver builds (Node merges an agent's options last), each socket it opens
 * is dropped after IDLE_TIMEOUT_MS of silence, and destroying it ends every pending POST.
 */
function httpLink(hive: HiveDriver, target: HiveTarget): Link {
  const agent = target.tls
    ? new HttpsAgent({ keepAlive: true, maxSockets: 1, ...target.tls })
    : new HttpAgent({ keepAlive: true, maxSockets: 1 });
  const open = agent.createConnection.bind(agent);
  agent.createConnection = (options, callback) => {
    const socket = open(options, callback) as Socket;
    // No error: the POST waiting on it fails with "socket hang up", an idle pooled socket just goes.
    socket.setTimeout(IDLE_TIMEOUT_MS, () => socket.destroy());
    return socket;
  };
  return {
    connection: new hive.connections.HttpConnection(),
    options: {
      path: target.httpPath,
      https: target.tls !== null,
      // hive-driver sets rejectUnauthorized false for https unless these options say otherwise.
      nodeOptions: { agent, ...(target.tls ?? {}) },
    },
    auth: authentication(hive, target),
    // Node's agent opens new sockets after destroy(): a CloseSession can still follow a dropped call.
    drop: () => agent.destroy(),
    sessionEndsWithConnection: false,
  };
}

/** Waits for `call` to settle, at most `ms`; its outcome is ignored. */
async function settledWithin(call: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([call.catch(() => {}), timeout]);
  clearTimeout(timer);
}

export async function session(target: HiveTarget) {
  const hive = await hiveDriver();
  const { TCLIService, TCLIService_types } = hive.thrift;
  const link = target.httpPath === null ? binaryLink(hive, target) : httpLink(hive, target);
  const client = new hive.HiveClient(TCLIService, TCLIService_types);
  // Thrift leaves calls pending forever when the connection ends or an HTTP POST fails: every call races that.
  let fail: (error: unknown) => void = () => {};
  const lost = new Promise<never>((_, reject) => {
    fail = reject;
    // The connection's own error, so a TLS failure or an HTTP 401 is told apart from a dropped connection.
    client.on('error', (error: unknown) => reject(error ?? new Error('connection error')));
    client.on('close', () => reject(new Error('connection closed')));
    client.on('timeout', () => reject(new Error('connection timed out')));
  });
  lost.catch(() => {});
  const guard = <T>(call: Promise<T>): Promise<T> => Promise.race([call, lost]);
  let opened: Awaited<ReturnType<typeof client.openSession>> | undefined;
  const end = async () => {
    const open = opened;
    if (open && !link.sessionEndsWithConnection) {
      // A call still pending (a read given up mid-fetch) would hold the one socket the CloseSession needs.
      link.drop();
      await settledWithin(
        Promise.resolve().then(() => open.close()),
        CLOSE_TIMEOUT_MS,
      );
    }
    client.close();
    link.drop();
  };
  let ended: Promise<void> | undefined;
  // Once: a read closes on abort and again as it ends. Never rejects; a CloseSession refused or lost is let go.
  const close = () => {
    ended ??= end();
    return ended;
  };
  const deadline = setTimeout(() => {
    fail(new Error('connection timed out'));
    link.drop();
  }, CONNECT_TIMEOUT_MS);
  try {
    await guard(
      client.connect({ host: target.host, port: target.port, options: link.options }, link.connection, link.auth),
    );
    opened = await guard(
      client.openSession({ client_protocol: TCLIService_types.TProtocolVersion.HIVE_CLI_SERVICE_PROTOCOL_V10 }),
    );
    return { close, opened, guard, utils: new hive.HiveUtils(TCLIService_types) };
  } catch (error) {
    void close();
    throw error;
  } finally {
    clearTimeout(deadline);
  }
}

export type Session = Awaited<ReturnType<typeof session>>;
