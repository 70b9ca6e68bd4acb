/**
 * The data catalog: datasets, containers and encrypted secrets.
 * Provides DATASETS (ReBAC-checked dataset access) and SECRETS (`reveal`
 * for connectors, never routed) to later domains; adds `meshgate rotate-kek`.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import { USER_DIRECTORY } from '../auth/index.ts';
import { AUTHZ } from '../authz/index.ts';
import { rotateKekCommand } from './cli.ts';
import { ContainerService } from './containers-service.ts';
import { createContainerStore } from './containers-store.ts';
import { DATASETS, DatasetService } from './datasets-service.ts';
import { createDatasetStore } from './datasets-store.ts';
import { CatalogErrors } from './errors.ts';
import { createKekLedger } from './kek-ledger.ts';
import { KekRing, kekDirOf } from './kek-ring.ts';
import { KeyManager } from './keys.ts';
import { KEK_ROTATION, rotateKek } from './rotate.ts';
import { catalogRoutes } from './routes.ts';
import { SECRETS, SecretsService } from './secrets-service.ts';
import { createSecretStore } from './secrets-store.ts';

export { DATASETS, type DatasetService } from './datasets-service.ts';
export type { DatasetView } from './datasets-wire.ts';
export { checkKekFiles, type KekFileStatus } from './kek-check.ts';
export { kekDirOf } from './kek-ring.ts';
export { SECRETS, type SecretsAccess } from './secrets-service.ts';
export { parseBoundSecretReference } from './urn.ts';

export const catalogModule: HandlerModule = {
  name: 'catalog',
  errors: CatalogErrors,
  commands: [rotateKekCommand],
  init(deps) {
    const authz = deps.services.get(AUTHZ);
    const users = deps.services.get(USER_DIRECTORY);
    const keys = new KeyManager(new KekRing(kekDirOf(deps.config)), createKekLedger(deps.db), deps.now);
    keys.ensureReady();
    const owners = {
      localUserId: (username: string) => {
        const user = users.resolve(username);
        return user?.source === 'local' && user.username === username ? user.id : undefined;
      },
      user: (id: string) => {
        const user = users.byId(id);
        return user && { userId: user.id, source: user.source, roles: user.roles, disabled: user.disabled };
      },
    };
    const secretStore = createSecretStore(deps.db);
    const secrets = new SecretsService(secretStore, keys, owners, deps.now);
    deps.services.provide(KEK_ROTATION, (options) => rotateKek(keys, secretStore, deps.now, options));
    const datasetStore = createDatasetStore(deps.db);
    const containers = new ContainerService(createContainerStore(deps.db), datasetStore, authz, deps.now);
    const datasets = new DatasetService(datasetStore, (urn) => containers.exists(urn), authz, secrets, deps.now);
    deps.services.provide(SECRETS, secrets);
    deps.services.provide(DATASETS, datasets);
    return { routes: catalogRoutes({ datasets, containers, secrets }, deps.config.limits.maxBodyBytes) };
  },
};
