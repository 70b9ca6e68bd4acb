/**
 * The PostgreSQL drizzle schema, for drizzle-kit (drizzle.pg.config.ts): the tables of data/schema.ts as
 * gateway/db/postgres/mirror.ts translates them. drizzle-kit finds tables among a module's named exports, so each
 * is named here; test/unit/gateway/db/pg-mirror.test.ts fails when a table of data/schema.ts is missing.
 */
import { mirrorSchema } from '../gateway/db/postgres/mirror.ts';
import * as schema from './schema.ts';

export const {
  attributeSchema,
  catalogContainers,
  catalogDatasetSecrets,
  catalogDatasets,
  catalogKeks,
  catalogSecrets,
  changes,
  clusterFiles,
  clusterNodes,
  clusterIdentity,
  deploymentHealth,
  deploymentReplicaHealth,
  deploymentTraffic,
  deploymentTrafficMinutes,
  deployments,
  executionGate,
  federationUsers,
  federations,
  jobShadows,
  jobs,
  loginThrottle,
  meshReplay,
  pats,
  rateLimitBuckets,
  peerNonces,
  refreshTokens,
  retrievalJobs,
  retrievalSpentTokens,
  revokedFamilies,
  revokedSessions,
  routingConfig,
  tuples,
  users,
} = mirrorSchema(schema);
