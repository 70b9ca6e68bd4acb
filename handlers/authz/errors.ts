/** Reasons of the ReBAC layer (contract §6, §10). */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const AuthzErrors = defineErrors('authz', {
  rebac_denied: {
    status: 403,
    doc: "The caller lacks the relation on the object; `relation` and `object` say which. Valid mesh signature, refused by the receiver's ReBAC.",
  },
  namespace_unsupported: {
    status: 403,
    doc: 'The tuple or check names an object namespace outside the model (federation, dataset, model, cluster_jobs, cluster).',
  },
  relation_unsupported: { status: 422, doc: 'The relation is not defined for that namespace in the model, or the subject namespace is not `user`.' },
  object_id_invalid: { status: 422, doc: "The object id is empty, or not the namespace's fixed id (cluster_jobs takes only `__all__`)." },
});
