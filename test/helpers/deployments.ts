/**
 * The deployments registry and its authz service over a migrated in-memory
 * SQLite, no gateway (unit tests, bench/proxy/access.ts).
 */

import { AuthzService } from '../../domains/authz/service.ts';
import { createTupleStore } from '../../domains/authz/store.ts';
import { DeploymentService } from '../../domains/serving/service.ts';
import type { DeploymentRow } from '../../domains/serving/store.ts';
import { createDeploymentStore } from '../../domains/serving/store.ts';
import { openDatabase } from '../../gateway/db/open.ts';
import type { Principal } from '../../gateway/principal.ts';

export function memoryDeployments() {
  const { sqlite, db } = openDatabase(':memory:');
  const authz = new AuthzService(createTupleStore(sqlite), () => new Date());
  const service = new DeploymentService(
    createDeploymentStore(db),
    authz,
    { prefixes: () => ({ models: '/runtime/models' }), origin: () => 'https://p.example' },
    () => new Date(),
  );
  return { authz, service, close: () => sqlite.close() };
}

/** A native-realm caller of the default tenant, as a verified token would make it. */
export function localPrincipal(userId: string, roles: string[] = []): Principal {
  return {
    userId,
    username: userId,
    email: null,
    roles,
    attributes: {},
    tenantId: '__default__',
    source: 'local',
    authMethod: 'jwt',
  };
}

/** A bare row of an app deployment with one replica and every option at its default. */
export function deploymentRow(id: string): DeploymentRow {
  return {
    id,
    kind: 'app' as const,
    name: id,
    upstream: 'http://127.0.0.1:9',
    stripPrefix: true,
    websocket: true,
    timeoutSeconds: null,
    requiresAuth: true,
    forwardAuthorization: false,
    visibility: 'private' as const,
    legacyPort: null,
    healthPath: null,
    upstreams: null,
    affinity: 'none' as const,
    retries: null,
    maxConcurrent: null,
    queueTimeoutMs: null,
    rateLimit: null,
    createdBy: 'admin',
    createdAt: '2026-01-01T00:00:00.000Z',
  };
}
