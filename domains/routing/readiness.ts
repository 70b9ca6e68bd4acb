/**
 * Readiness (GET /api/ready): the gateway can answer requests that need its
 * database. Unlike /api/ping (liveness: the process and its event loop
 * answer), it runs a real query on the schema's own table, so a closed,
 * unreadable or corrupt database answers 503 and a load balancer or systemd
 * health check takes this instance out of rotation, as Kubernetes readiness
 * probes and Envoy's active health checks expect of an upstream.
 */
import type { SqlConnection } from '../../gateway/db/connection.ts';
import { RoutingErrors } from './errors.ts';

/** The migrations table every opened database has: reading it reads the database file through SQLite. */
const PROBE = 'SELECT count(*) AS applied FROM __drizzle_migrations';

/** Throws database_unavailable (503) when the query fails; the cause goes to the log, never to the caller. */
export function createReadinessProbe(sqlite: SqlConnection): () => void {
  return () => {
    try {
      const row = sqlite.prepare(PROBE).get() as { applied: number } | undefined;
      if (!row || row.applied < 1) throw new Error('the database has no applied migration');
    } catch (error) {
      throw RoutingErrors.make.database_unavailable({}, error);
    }
  };
}
