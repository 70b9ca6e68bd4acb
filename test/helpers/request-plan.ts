/**
 * A request plan for unit tests of the routing and pipeline code: the real plan (gateway/pipeline/plan.ts) on the
 * embedded default configuration, with an authenticator the test gives and no mesh directory.
 */
import { loadConfig } from '../../gateway/config/load.ts';
import type { SqlConnection } from '../../gateway/db/connection.ts';
import { createLoggers } from '../../gateway/log.ts';
import { createMetrics } from '../../gateway/observability/metrics.ts';
import { buildRequestPlan, type RequestPlan } from '../../gateway/pipeline/plan.ts';
import { AUTHENTICATOR, type Authenticator } from '../../gateway/principal.ts';
import { ServiceRegistry } from '../../gateway/services.ts';

/** An authenticator for plans whose routes never authenticate in the test. */
export const UNCALLED_AUTHENTICATOR: Authenticator = {
  authenticate: () => {
    throw new Error('not called');
  },
};

export function testPlan(authenticator: Authenticator = UNCALLED_AUTHENTICATOR): RequestPlan {
  const services = new ServiceRegistry();
  services.provide(AUTHENTICATOR, authenticator);
  const { accessLog, close } = createLoggers('silent', { write: () => undefined });
  close();
  return buildRequestPlan({
    config: loadConfig({ env: {}, overrides: { dataDir: '/nonexistent' } }),
    services,
    // Only the mesh stage reads the database, and without a mesh directory the plan builds none.
    sql: null as unknown as SqlConnection,
    metrics: createMetrics({ databaseGauges: false }),
    accessLog,
    observer: null,
    origin: () => 'https://gateway.test',
    now: () => new Date(),
  });
}
