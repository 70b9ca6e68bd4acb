/** ReBAC (issue 4): the tuple store and checker every domain asks, provided as AUTHZ. */
import type { HandlerModule } from '../../gateway/module.ts';
import { AuthzErrors } from './errors.ts';
import { AUTHZ, AuthzService } from './service.ts';
import { createTupleStore } from './store.ts';

export { AUTHZ, type AuthzService, type ObjectRef, type TupleInput } from './service.ts';

export const authzModule: HandlerModule = {
  name: 'authz',
  errors: AuthzErrors,
  init(deps) {
    const service = new AuthzService(createTupleStore(deps.sqlite), deps.now);
    deps.services.provide(AUTHZ, service);
    return { routes: [] };
  },
};
