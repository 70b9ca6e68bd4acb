/**
 * The domains as the composition root sees them: their error tables, their
 * dependencies, and their initialisation in order, for `serve` and for a
 * CLI command alike. This is the only importer of domains/index.ts.
 */
import type { DestinationStream, Logger } from 'pino';
import { DOMAIN_MODULES } from '../domains/index.ts';
import { type ClusterNodes, nodeIdOf, ONE_NODE, SharedClusterNodes } from '../gateway/cluster/nodes.ts';
import type { Config } from '../gateway/config/schema.ts';
import { type ChangeFeed, SqliteChangeFeed } from '../gateway/db/change-feed.ts';
import { type OpenedDatabase, openConfiguredDatabase } from '../gateway/db/open.ts';
import { PgChangeFeed, pgListener } from '../gateway/db/postgres/change-feed.ts';
import type { ErrorTable } from '../gateway/errors/api-error.ts';
import { GatewayErrors } from '../gateway/errors/gateway-errors.ts';
import { deriveOrigin } from '../gateway/http/origin.ts';
import { createLoggers, type Loggers } from '../gateway/log.ts';
import { MeshErrors } from '../gateway/mesh/errors.ts';
import type { BootedDomains, CliCommand, GatewayDeps, HandlerInstance, HandlerModule } from '../gateway/module.ts';
import { createMetrics } from '../gateway/observability/metrics.ts';
import { idsOnlyTracing } from '../gateway/observability/tracing.ts';
import { SINGLE_PROCESS } from '../gateway/process/link.ts';
import { ServiceRegistry } from '../gateway/services.ts';
import { joinClusterIdentity } from './cluster-identity.ts';

/** Every error table: the gateway's own plus each domain's (ERRORS.md mirrors this). */
export const ERROR_TABLES: readonly ErrorTable[] = [
  ...new Set([
    GatewayErrors,
    MeshErrors,
    ...DOMAIN_MODULES.flatMap((m) =>
      m.errors === undefined ? [] : Array.isArray(m.errors) ? m.errors : [m.errors as ErrorTable],
    ),
  ]),
];

/** Every domain's CLI subcommands. */
export const DOMAIN_COMMANDS: readonly CliCommand[] = DOMAIN_MODULES.flatMap((m) => m.commands ?? []);

export type DomainDeps = Omit<
  GatewayDeps,
  'db' | 'sql' | 'databaseEngine' | 'feed' | 'nodes' | 'logger' | 'accessLog' | 'services'
>;

/** The running domains over one opened database; `close` ends them in reverse order, then the database. */
export interface Domains extends BootedDomains {
  readonly deps: GatewayDeps;
  readonly instances: readonly HandlerInstance[];
}

/**
 * Opens the database and initialises the modules in order; whatever fails leaves no domain and no database open.
 * A serving gateway then tails the change feed; a CLI command only writes (its writes publish through the feed).
 */
export async function initDomains(
  modules: readonly HandlerModule[],
  base: DomainDeps,
  logs: Loggers,
): Promise<Domains> {
  const database = await openConfiguredDatabase(base.config);
  const { sql, db, engine } = database;
  // Created before any domain loads its state, so nothing committed meanwhile is missed.
  const feed = changeFeedOf(database, base.config, logs.logger);
  const nodes = clusterNodesOf(database, base);
  const deps: GatewayDeps = {
    ...base,
    db,
    sql,
    databaseEngine: engine,
    feed,
    nodes,
    logger: logs.logger,
    accessLog: logs.accessLog,
    services: new ServiceRegistry(),
  };
  const instances: HandlerInstance[] = [];
  const close = async () => {
    nodes.close();
    feed.close();
    await closeAll(instances, logs.logger);
    sql.close();
  };
  try {
    for (const module of modules) instances.push(await module.init(deps));
  } catch (error) {
    await close();
    throw error;
  }
  if (base.purpose === 'serve') feed.start();
  // The process that owns this node's work says the node is alive.
  if (base.purpose === 'serve' && base.process.role !== 'worker') nodes.start();
  return { deps, instances, services: deps.services, close };
}

function changeFeedOf(database: OpenedDatabase, config: Readonly<Config>, logger: Logger): ChangeFeed {
  if (database.engine === 'sqlite') return new SqliteChangeFeed(database.sql, config.feed, logger);
  return new PgChangeFeed(database.sql, pgListener(config.database as string), config.feed, logger);
}

function clusterNodesOf(database: OpenedDatabase, base: DomainDeps): ClusterNodes {
  if (database.engine === 'sqlite') return ONE_NODE;
  const { dataDir, nodes } = base.config;
  const url = nodes.url ?? base.runtime.origin();
  return new SharedClusterNodes(database.sql, nodeIdOf(dataDir), { ...nodes, url });
}

export interface CommandIo {
  readonly now?: () => Date;
  /** Where a command's logs and operator lines go: never stdout, which carries the command's output. */
  readonly logDestination?: DestinationStream;
  readonly err: (line: string) => void;
}

/**
 * Boots the named domains for a CLI command exactly as `serve` initialises
 * them, in init order, with no listener and no first-start setup. A module
 * that needs a service another one provides names that one too.
 */
export async function bootDomains(config: Readonly<Config>, names: readonly string[], io: CommandIo): Promise<Domains> {
  const unknown = names.filter((name) => !DOMAIN_MODULES.some((m) => m.name === name));
  if (unknown.length > 0) throw new Error(`unknown domain module(s): ${unknown.join(', ')}`);
  const origin = deriveOrigin(config, config.httpsPort);
  const base: DomainDeps = {
    config,
    purpose: 'command',
    // A command is not scraped and exports no spans: its domains record into a registry nobody reads.
    metrics: createMetrics(),
    tracing: idsOnlyTracing(),
    listeners: null,
    process: SINGLE_PROCESS,
    runtime: {
      origin: () => origin,
      externalUrl: () => config.externalUrl?.replace(/\/$/, '') || origin,
      caPem: () => {
        throw new Error('the platform CA is known to a serving gateway only');
      },
      serverCertPem: () => {
        throw new Error('the server certificate is known to a serving gateway only');
      },
    },
    now: io.now ?? (() => new Date()),
    announce: io.err,
  };
  const logs = createLoggers(config.logLevel, io.logDestination ?? process.stderr);
  // On PostgreSQL a command holds the cluster identity while it runs: it may change an identity file (rotate-kek).
  const identity = await joinClusterIdentity(config);
  const domains = await initDomains(
    DOMAIN_MODULES.filter((m) => names.includes(m.name)),
    base,
    logs,
  ).catch((error: unknown) => {
    identity?.end(false);
    identity?.close();
    logs.close();
    throw error;
  });
  return {
    ...domains,
    async close() {
      await domains.close();
      identity?.end(true);
      identity?.close();
      logs.close();
    },
  };
}

async function closeAll(instances: HandlerInstance[], logger: Logger): Promise<void> {
  for (const instance of [...instances].reverse()) {
    try {
      await instance.close?.();
    } catch (error) {
      logger.warn({ err: error }, 'domain close failed');
    }
  }
}
