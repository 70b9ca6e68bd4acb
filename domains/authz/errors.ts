/** Reasons of the ReBAC layer and the subjects API. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const AuthzErrors = defineErrors('authz', {
  access_denied: {
    status: 403,
    stringDetail: 'access_denied',
    fieldsBesideDetail: true,
    doc:
      'POST /auth/check decided deny: `{"detail": "access_denied", "allow": false, "decision_id", "reason"}` ' +
      '(docs/wire.md); the check itself succeeded.',
  },
  rebac_denied: {
    status: 403,
    doc:
      'The caller lacks the relation on the object; `relation` and `object` ' +
      "say which. Valid mesh signature, refused by the receiver's ReBAC. " +
      'Writing or deleting tuples needs a native admin or an owner of the ' +
      'object.',
  },
  namespace_unsupported: {
    status: 403,
    doc: 'The object namespace is not in the model (federation, dataset, model, app, tool, cluster_jobs, cluster).',
  },
  relation_unsupported: {
    status: 422,
    doc: 'The relation is not defined for that namespace in the model, or the subject namespace is not `user`.',
  },
  object_id_invalid: {
    status: 422,
    doc: "The object id is empty, or not the namespace's fixed id (cluster_jobs takes only `__all__`).",
  },
  tenant_mismatch: { status: 422, doc: 'The body `tenant_id` and the `X-Tenant-Id` header name different tenants.' },
  subject_not_found: { status: 404, doc: 'No local user with that id or username (subjects API).' },
  subject_name_invalid: {
    status: 422,
    doc: 'A new subject needs a username of 1–128 letters, digits and `._@-`, starting with a letter or digit.',
  },
  subject_is_brokered: {
    status: 409,
    doc:
      'PUT on a mesh-brokered user: their attributes come from the peer per ' +
      'identity mode and they have no password here. Grants and delete still ' +
      'work.',
  },
  subject_has_grants: {
    status: 409,
    doc:
      'DELETE of a subject that still holds tuples; `grants` gives the ' +
      'count. Add `?cascade=grants` to delete them too.',
  },
  subject_is_caller: { status: 409, doc: 'An administrator cannot delete their own user through the subjects API.' },
});
