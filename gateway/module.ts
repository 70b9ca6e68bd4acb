/**
 * The only contract between the gateway and a domain. A domain
 * exports one HandlerModule; init() receives the gateway's dependencies and
 * returns an instance with its routes and mounts, so several gateways can
 * live in one process (tests) without module-level state.
 */
import type { Http2SecureServer } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectRouter } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { ClusterNodes } from './cluster/nodes.ts';
import type { Config } from './config/schema.ts';
import type { ChangeFeed } from './db/change-feed.ts';
import type { DatabaseEngine, SqlConnection } from './db/connection.ts';
import type { Db } from './db/open.ts';
import type { ErrorTable } from './errors/api-error.ts';
import type { Reply, RequestContext } from './http/context.ts';
import type { AccessSink } from './log.ts';
import type { MetricsRegistry } from './observability/metrics.ts';
import type { Tracing } from './observability/tracing.ts';
import type { ProcessPlace } from './process/link.ts';
import type { ServiceRegistry } from './services.ts';

export type HttpMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';

/**
 * none: anonymous. optional: a credential is parsed when present.
 * user: any authenticated caller. admin: a native-realm administrator.
 */
export type AuthMode = 'none' | 'optional' | 'user' | 'admin';

export interface RouteDef {
  method: HttpMethod | readonly HttpMethod[];
  /** Relative to the api prefix: '/auth/token', '/cluster/federations/:id', '/catalog/datasets/v2/*urn'. */
  path: string;
  auth: AuthMode;
  /** Refuse mesh-brokered principals with endpoint_requires_native_realm. */
  nativeOnly?: boolean;
  /** The path may hold %2F (URN routes). */
  allowEncodedSlash?: boolean;
  /** Also accept bearer tokens of trusted shared-realm issuers (at least mesh egress). */
  acceptSharedRealm?: boolean;
  /** What the API document (/api/openapi.json) says of this route. */
  doc: RouteDoc;
  handle(ctx: RequestContext): Promise<Reply | undefined> | Reply | undefined;
}

/**
 * A route's inputs, answers and refusals as the OpenAPI document states them. The schemas are the
 * same zod values the handler parses with, so the document cannot drift from the validation.
 * Reasons the kernel gives on the route's behalf (authentication, body limits, validation, paths)
 * are added by the document builder from `auth`, `nativeOnly` and the inputs declared here.
 */
export interface RouteDoc {
  summary: string;
  /** Path parameters narrower than a plain string (UUIDs, names with a pattern). */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** A JSON request body. */
  body?: z.ZodType;
  /** An application/x-www-form-urlencoded request body. */
  form?: z.ZodObject;
  /** Successful answers by status: the JSON body's schema, or null for an empty body. */
  answers: Readonly<Record<number, z.ZodType | null>>;
  /** The successful answers' media type when it is not JSON (an event stream, a page). */
  answerMedia?: string;
  /** The registered reasons the route's own logic may refuse with. */
  errors?: readonly string[];
}

/** A non-API service (models, apps, tools, frontend, ...) served below its routing prefix. */
export interface ServiceMount {
  service: string;
  auth: AuthMode;
  /**
   * Pages and runtime URLs a browser navigates to: the platform session cookie stands in for a bearer as sent, and a
   * stale one counts as no credential (the mount sends the browser to sign in). API routes take the cookie only from
   * the gateway's own pages.
   */
  browserSession?: boolean;
  handle(ctx: RequestContext): Promise<Reply | undefined> | Reply | undefined;
  /**
   * HTTP/1.1 Upgrade requests (websockets) below the prefix, after the same stages as a request to the mount
   * (authentication included). A rejection before the hook wrote the 101 is answered as an error response.
   */
  upgrade?: UpgradeHook;
}

/** A mount's websocket hook: `ctx.res` is bound to `socket`; the hook answers the 101 there and keeps the socket. */
export type UpgradeHook = (ctx: RequestContext, socket: Duplex, head: Buffer) => Promise<void>;

export interface RuntimeInfo {
  /** The canonical public HTTPS origin (PLATFORM_ORIGIN), known once listening. */
  origin(): string;
  /** PLATFORM_EXTERNAL_URL. */
  externalUrl(): string;
  /** This gateway's platform CA (PEM). */
  caPem(): string;
  /** The HTTPS listener's certificate chain (PEM, no key): diagnose reads its expiry. */
  serverCertPem(): string;
}

/**
 * An extra HTTPS listener a domain opens (legacy runtime ports), built by the composition root like the main one:
 * the same listener stages, then `mount`'s chain for every path `resolve` admits, websocket upgrades included.
 */
export interface ListenerOptions {
  readonly mount: ServiceMount;
  /** The service and the path below its prefix a request's path stands for; null: no route. */
  resolve(rawPath: string): { service: string; rest: string; enabled: boolean } | null;
  /** Fields added to every access-log line of this listener. */
  readonly accessFields?: Readonly<Record<string, string | number>>;
  readonly logger: Logger;
}

export interface OpenedListener {
  readonly server: Http2SecureServer;
  /** The listener's live connections, so closing it can drop them at once. */
  readonly sockets: ReadonlySet<Socket>;
}

export interface ListenerFactory {
  https(options: ListenerOptions): OpenedListener;
}

export interface GatewayDeps {
  readonly config: Readonly<Config>;
  readonly db: Db;
  /** The same database's statement API, for stores written in SQL (the subset both engines run). */
  readonly sql: SqlConnection;
  readonly databaseEngine: DatabaseEngine;
  /** What other processes on the same database changed: subscribe to the topics a cache depends on. */
  readonly feed: ChangeFeed;
  /** The cluster's nodes: one (SQLite), or the nodes sharing the PostgreSQL database. */
  readonly nodes: ClusterNodes;
  readonly logger: Logger;
  /** The access log (log.ts: same destination, lines built by the accessLog stage). */
  readonly accessLog: AccessSink;
  readonly services: ServiceRegistry;
  /** This gateway's Prometheus registry: a module declares its metrics here, with bounded labels only. */
  readonly metrics: MetricsRegistry;
  /** Spans and W3C trace context; a request's span is RequestContext.span. */
  readonly tracing: Tracing;
  readonly runtime: RuntimeInfo;
  /**
   * 'serve': the gateway is starting (first-start setup such as the bootstrap admin runs);
   * 'command': the root boots domains for a CLI command, and nothing listens.
   */
  readonly purpose: 'serve' | 'command';
  /** null when booted for a command. */
  readonly listeners: ListenerFactory | null;
  /**
   * Which process of the gateway this is (gateway/process/link.ts): work that must happen once (local jobs,
   * legacy ports, log sweeps) runs where the role is not `worker`; a worker asks the primary through its link.
   */
  readonly process: ProcessPlace;
  readonly now: () => Date;
  /** Operator-facing lines printed once to stdout, not logged (the bootstrap admin password). */
  announce(line: string): void;
}

export interface HandlerInstance {
  routes?: readonly RouteDef[];
  mounts?: readonly ServiceMount[];
  /** Connect-RPC services, served at `/<package>.<Service>/<Method>` on the TLS listener. */
  rpc?: RpcServices;
  close?(): Promise<void> | void;
}

/**
 * A domain's Connect-RPC services, named up front and implemented on first use: the RPC libraries, the generated
 * protobuf code and what the implementation imports (Arrow, for Flight) cost every gateway start and resident memory,
 * and most gateways never serve an RPC (bench/README.md, startup).
 */
export interface RpcServices {
  /** The fully qualified names (`<package>.<Service>`) that `register` registers: the paths routed to the RPC. */
  readonly services: readonly string[];
  /** Imports the implementation; the registrar it returns adds the services to the router. */
  load(): Promise<(router: ConnectRouter) => void>;
}

/** Domains initialised for a command by the composition root, the same way `serve` initialises them. */
export interface BootedDomains {
  readonly services: ServiceRegistry;
  close(): Promise<void>;
}

/** What a domain's CLI subcommand gets: configuration and the domains it names, nothing global. */
export interface CliEnv {
  readonly config: Readonly<Config>;
  /** The configuration read again the way `config` was (file, environment, flags), for a reload; `serve` reads it. */
  reloadConfig?(): Readonly<Config>;
  /** Initialises the named modules (with what they need listed too) in init order; the caller closes them. */
  boot(modules: readonly string[]): Promise<BootedDomains>;
  readStdin(): Promise<string>;
  out(line: string): void;
  err(line: string): void;
}

export interface CliCommand {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  /** Returns the process exit code. */
  run(args: string[], env: CliEnv): Promise<number>;
}

export interface HandlerModule {
  readonly name: string;
  /** The domain's reasons; a table shared by several domains (domains/gates/errors.ts) is registered once. */
  readonly errors?: ErrorTable | readonly ErrorTable[];
  readonly commands?: readonly CliCommand[];
  init(deps: GatewayDeps): Promise<HandlerInstance> | HandlerInstance;
}
