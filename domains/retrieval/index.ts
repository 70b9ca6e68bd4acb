/**
 * Retrieval: jobs over catalog datasets with inline, SSE and gRPC
 * transports, filesystem and Postgres sources, per-record gates, and the
 * dataset gate binding API. Uses AUTHZ through the catalog's DATASETS and
 * the catalog's SECRETS for connector credentials.
 */

import { createNodeForwarder } from '../../gateway/cluster/forward.ts';
import type { ChangeFeed } from '../../gateway/db/change-feed.ts';
import type { HandlerModule } from '../../gateway/module.ts';
import { USER_DIRECTORY, type UserDirectory } from '../auth/index.ts';
import { DATASETS, SECRETS } from '../catalog/index.ts';
import { RECORD_GATE_CATALOG } from '../gates/index.ts';
import { catalogDatasets } from './catalog-adapter.ts';
import { RetrievalNodes, spendInDatabase, streamTokenKey } from './cluster.ts';
import { RetrievalErrors } from './errors.ts';
import { GateBindings } from './gates/binding.ts';
import { recordGateCatalog } from './gates/runner.ts';
import { observeRuns } from './metrics.ts';
import { SourceRegistry } from './plan.ts';
import { retrievalRoutes } from './routes.ts';
import { ActiveRuns } from './runs.ts';
import { RetrievalService } from './service.ts';
import { sharedRuns } from './shared.ts';
import { filesystemSources } from './sources/filesystem/source.ts';
import { hiveSources } from './sources/hive/source.ts';
import { kafkaSources } from './sources/kafka/source.ts';
import { postgresSources } from './sources/postgres/source.ts';
import { s3Sources } from './sources/s3/source.ts';
import { slackSources } from './sources/slack/source.ts';
import { createJobStore } from './store.ts';
import { StreamTokens } from './tokens.ts';
import { collectInline } from './transports/inline.ts';
import { retrievalRpc, STREAM_LOCATIONS } from './transports/rpc.ts';

/** Enabled and not deleted; looked up afresh (UserDirectory catches the change feed up first). */
function activeUsers(users: UserDirectory): (userId: string) => boolean {
  return (userId) => users.byId(userId)?.disabled === false;
}

/**
 * A user disabled or deleted, in any process or by the CLI, loses the streams they are reading in this one, as
 * their tokens stop working: every process follows the users' change feed.
 */
function stopDisabledReaders(feed: ChangeFeed, runs: ActiveRuns, userActive: (userId: string) => boolean): void {
  const stop = (gone: (readerId: string) => boolean) =>
    runs.stopReaders(gone, RetrievalErrors.make.retrieval_reader_disabled());
  feed.subscribe('users', (userId) => stop((readerId) => readerId === userId && !userActive(readerId)));
  feed.onReset('users', () => stop((readerId) => !userActive(readerId)));
}

export const retrievalModule: HandlerModule = {
  name: 'retrieval',
  errors: RetrievalErrors,
  async init(deps) {
    const settings = deps.config.retrieval;
    const datasets = catalogDatasets(deps.services.get(DATASETS));
    const store = createJobStore(deps.db);
    const sources = new SourceRegistry([
      filesystemSources(settings.fsRoots),
      postgresSources(() => deps.services.find(SECRETS)),
      s3Sources(() => deps.services.find(SECRETS), settings.endpointHosts.s3),
      kafkaSources(() => deps.services.find(SECRETS)),
      hiveSources(settings.fsRoots, () => deps.services.find(SECRETS), settings.endpointHosts.s3),
      slackSources(() => deps.services.find(SECRETS)),
    ]);
    const runs = new ActiveRuns(store, deps.now);
    const nodes = new RetrievalNodes(deps.nodes, deps.feed);
    nodes.follow(runs);
    const userActive = activeUsers(deps.services.get(USER_DIRECTORY));
    stopDisabledReaders(deps.feed, runs, userActive);
    const shared = await sharedRuns(deps.process, runs, () => streamTokenKey(deps.config.dataDir));
    const ledger = { tokenKey: shared.tokenKey, spend: spendInDatabase(deps.sql, deps.now) };
    const service = new RetrievalService({
      store,
      datasets,
      sources,
      runs,
      shared,
      nodes,
      tokens: new StreamTokens(settings.grpcTokenTtlSeconds, deps.now, ledger, userActive),
      settings,
      now: deps.now,
      logger: deps.logger,
      observe: observeRuns(deps.metrics, deps.tracing),
      origin: () => deps.runtime.origin(),
      locations: STREAM_LOCATIONS,
      inline: collectInline,
    });
    deps.services.provide(RECORD_GATE_CATALOG, recordGateCatalog);
    const nodeForwarder = createNodeForwarder({
      caPem: () => deps.runtime.caPem(),
      servername: deps.config.hostnames[0] as string,
      self: deps.nodes.self ?? '',
    });
    const routes = retrievalRoutes({
      service,
      gates: new GateBindings(datasets),
      maxBody: deps.config.limits.maxBodyBytes,
      heartbeatMs: settings.heartbeatMs,
      logger: deps.logger,
      nodes: nodeForwarder,
    });
    return {
      routes,
      rpc: retrievalRpc(service),
      async close() {
        await nodeForwarder.close();
        await service.close();
      },
    };
  },
};
