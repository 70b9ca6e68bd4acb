/**
 * Joining a PostgreSQL cluster's identity (gateway/cluster/identity.ts) around a start: `serve` and every CLI
 * command take the cluster's files before their domains start and publish theirs after; a serving gateway then
 * writes each identity file another node publishes. A SQLite gateway is a cluster of one and joins nothing.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CLUSTER_FILES_TOPIC, ClusterIdentity, type IdentityRoot, readNodeKey } from '../gateway/cluster/identity.ts';
import { nodeIdOf } from '../gateway/cluster/nodes.ts';
import type { Config } from '../gateway/config/schema.ts';
import type { ChangeFeed } from '../gateway/db/change-feed.ts';
import { shippedFiles } from '../gateway/shipped.ts';
import { ACME_PREFIX, type AcmeCluster, acmeClusterOf } from '../gateway/tls/acme/cluster.ts';

export interface JoinedIdentity {
  /** Publishes this node's files when the start succeeded, and lets the next node start. */
  end(succeeded: boolean): void;
  /** From now on, writes every identity file another node publishes. */
  follow(feed: ChangeFeed, logger: Logger): void;
  /** The ACME folder's part of the identity, with the order lock. */
  acme(): AcmeCluster;
  close(): void;
}

/**
 * Takes the identity lock and the cluster's files; null on SQLite. The ACME folder (ACME_PREFIX) is taken only by
 * the process that runs ACME (`acme`: a single process or a primary, never a worker or a CLI command sharing its data
 * dir): from then on only that code writes it there (gateway/tls/acme/cluster.ts), so no other pull can put an older
 * certificate back over one it has just obtained; a worker gets its certificates over the owner link.
 */
export async function joinClusterIdentity(
  config: Readonly<Config>,
  { acme = false }: { acme?: boolean } = {},
): Promise<JoinedIdentity | null> {
  if (config.database === null) return null;
  const key = readNodeKey({ file: config.nodeKeyFile, base64: config.nodeKey });
  const { openPostgres } = await import('../gateway/db/postgres/open.ts');
  const sql = await openPostgres(config.database, shippedFiles().pgMigrationsFolder);
  const identity = new ClusterIdentity(sql, key, identityRoots(config), [ACME_PREFIX]);
  try {
    identity.begin({ managed: acme });
  } catch (error) {
    sql.close();
    throw error;
  }
  return {
    end: (succeeded) => identity.end(succeeded),
    follow(feed, logger) {
      feed.subscribe(CLUSTER_FILES_TOPIC, (path) => {
        try {
          if (identity.pull() > 0) logger.info({ path }, 'cluster identity: a file another node published was written');
        } catch (error) {
          logger.error({ err: error, path }, 'cluster identity: a published file could not be written');
        }
      });
    },
    acme: () => acmeClusterOf(sql, identity, nodeIdOf(config.dataDir), config.nodes.deadAfterMs),
    close: () => sql.close(),
  };
}

/** tls/, keys/ and the issuer of the data dir, and the KEK folder when configured outside it. */
function identityRoots(config: Readonly<Config>): IdentityRoot[] {
  const roots: IdentityRoot[] = [
    { name: 'tls', dir: join(config.dataDir, 'tls') },
    { name: 'keys', dir: join(config.dataDir, 'keys') },
    { name: 'issuer', file: join(config.dataDir, 'issuer') },
  ];
  return config.secrets.kekDir === null ? roots : [...roots, { name: 'kek', dir: config.secrets.kekDir }];
}
