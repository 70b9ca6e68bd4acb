/**
 * ReBAC: the tuple store and checker every domain asks, provided
 * as AUTHZ, plus the tuple, check, subjects and resource grants APIs.
 * Uses USER_DIRECTORY, so it is listed after the auth module.
 */
import type { HandlerModule } from '../../gateway/module.ts';
import { USER_DIRECTORY } from '../auth/index.ts';
import { AuthzErrors } from './errors.ts';
import { tupleRoutes } from './routes.ts';
import { AUTHZ, AuthzService } from './service.ts';
import { createTupleStore } from './store.ts';
import { resourceRoutes, subjectRoutes } from './subject-routes.ts';
import { SubjectsService } from './subjects.ts';

export { AuthzErrors } from './errors.ts';
export { isKnownRelation, MODEL, SUBJECT_NAMESPACES } from './model.ts';
export {
  AUTHZ,
  type AuthzService,
  type Decision,
  type ObjectRef,
  type TupleInput,
  type TupleMatch,
} from './service.ts';

export const authzModule: HandlerModule = {
  name: 'authz',
  errors: AuthzErrors,
  init(deps) {
    const tuples = createTupleStore(deps.sql);
    // Tuples written by another process or the CLI enter the index within the feed's bound (own writes at once).
    deps.feed.subscribe('authz_tuples', (key) => tuples.refresh(key));
    deps.feed.onReset('authz_tuples', () => tuples.reload());
    const authz = new AuthzService(tuples, deps.now);
    deps.services.provide(AUTHZ, authz);
    const subjects = new SubjectsService(deps.services.get(USER_DIRECTORY), authz);
    const maxBody = deps.config.limits.maxBodyBytes;
    return {
      routes: [
        ...tupleRoutes(authz, subjects, maxBody),
        ...subjectRoutes(subjects, maxBody),
        ...resourceRoutes(authz, maxBody),
      ],
    };
  },
};
