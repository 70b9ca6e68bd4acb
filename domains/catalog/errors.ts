/** Reasons of the catalog (our additions marked in docs/catalog.md). */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const CatalogErrors = defineErrors('catalog', {
  catalog_dataset_not_found: {
    status: 404,
    doc: 'No dataset with that URN is visible to the caller: absent, or no viewer/editor/owner relation.',
    stringDetail: 'Dataset not found',
  },
  catalog_schema_update_not_found: {
    status: 404,
    doc: 'Schema PUT on a dataset the caller cannot see; the SDK matches this exact string.',
    stringDetail: 'Dataset not found or schema could not be updated',
  },
  catalog_schema_not_set: {
    status: 404,
    doc: 'The dataset has no schema yet.',
    stringDetail: 'Dataset schema not found',
  },
  dataset_exists: { status: 409, doc: 'A dataset with the same platform, name and environment (hence URN) exists.' },
  container_not_found: {
    status: 404,
    doc: 'No container with that URN (a named `container_urn` or `parent_urn` included).',
  },
  container_exists: { status: 409, doc: 'A container with the same platform and name (hence URN) exists.' },
  container_parent_invalid: { status: 422, doc: '`parent_urn` names the container itself or one of its descendants.' },
  container_membership_admin_only: {
    status: 403,
    doc: "Setting or changing a dataset's `container_urn` is a membership change, which needs a native administrator.",
  },
  dataset_not_in_container: { status: 404, doc: 'Membership removal for a dataset that is not in that container.' },
  secret_not_found: {
    status: 404,
    doc: 'No secret with that URN that the caller may see (owner or native administrator).',
  },
  secret_exists: {
    status: 409,
    doc: 'A secret with that name exists and `clobber` is false, or the caller may not replace it.',
  },
  secret_owner_forbidden: {
    status: 403,
    doc: "A non-administrator named another user as the secret's `owner` (or `X-User-URN`).",
  },
  secret_owner_unknown: { status: 422, doc: '`owner` is not `urn:li:corpuser:<username>` of a local user.' },
  secret_reference_forbidden: {
    status: 403,
    doc:
      'Dataset properties reference a secret URN the caller cannot see (existence is not revealed), or keep such a ' +
      'reference while changing another property (where the credential would go). `secret_urn` says which.',
  },
  secret_unavailable: {
    status: 409,
    doc:
      'A dataset names a secret that can no longer be used: the secret it was bound to when the dataset was written ' +
      "was deleted (a secret created later under the same name is not used), or the dataset's owner may no longer " +
      'use it. The owner writes the dataset again to bind the reference anew. ' +
      '`secret_urn` is the reference as written.',
  },
  secret_unreadable: {
    status: 500,
    doc: 'A stored secret failed to decrypt (tampered row, or a key file not matching the database).',
  },
});
