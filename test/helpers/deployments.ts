/**
 * The deployments registry and its authz service over a migrated in-memory
 * SQLite, no gateway (unit tests, bench/proxy/access.ts).
 */
import { openDatabase } from '../../gateway/db/open.ts';
import { AuthzService } from '../../handlers/authz/service.ts';
import { createTupleStore } from '../../handlers/authz/store.ts';
import type { Principal } from '../../handlers/principal.ts';
import { DeploymentService } from '../../handlers/serving/service.ts';
import { createDeploymentStore } from '../../handlers/serving/store.ts';

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
