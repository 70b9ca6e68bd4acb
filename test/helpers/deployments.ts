/**
 * The deployments registry and its authz service over a migrated in-memory
 * SQLite, no gateway (unit tests, bench/proxy/access.ts).
 */

import { AuthzService } from '../../domains/authz/service.ts';
import { createTupleStore } from '../../domains/authz/store.ts';
import { DeploymentService } from '../../domains/serving/service.ts';
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
