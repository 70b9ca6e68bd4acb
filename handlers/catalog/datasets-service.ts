/**
 * Datasets (contract §7.3; spec: Authentication 8). ReBAC on `dataset:<urn>`:
 * viewer (or editor, owner) reads metadata and schema; owner writes and
 * deletes; the creator becomes owner. A dataset the caller cannot view is
 * 404, one it can view but not write is 403 `rebac_denied`. Mesh principals
 * see only what this (receiving) cluster granted them: AUTHZ gives them no
 * admin bypass. Transport-free.
 */
import { createServiceKey } from '../../gateway/services.ts';
import type { AuthzService } from '../authz/index.ts';
import { isNativeAdmin, type Principal } from '../principal.ts';
import type { DatasetRow, DatasetStore } from './datasets-store.ts';
import {
  type DatasetCreate,
  type DatasetPatch,
  type DatasetView,
  datasetView,
  mirrorLocation,
  type SchemaBody,
  type StoredSchema,
  storedSchema,
} from './datasets-wire.ts';
import { CatalogErrors } from './errors.ts';
import type { SecretsAccess } from './secrets-service.ts';
import { datasetUrn, secretReferences } from './urn.ts';

const object = (urn: string) => ({ namespace: 'dataset', id: urn });

export class DatasetService {
  constructor(
    private readonly store: DatasetStore,
    private readonly containerExists: (urn: string) => boolean,
    private readonly authz: AuthzService,
    private readonly secrets: Pick<SecretsAccess, 'canUse'>,
    private readonly now: () => Date,
  ) {}

  create(principal: Principal, input: DatasetCreate): string {
    const urn = datasetUrn({ platform: input.platform, name: input.name, environment: input.environment });
    const properties = mirrorLocation(input.properties);
    this.#checkSecretRefs(principal, properties, {});
    if (input.container_urn) this.#checkMembership(principal, input.container_urn);
    const at = this.now().toISOString();
    const row: DatasetRow = {
      urn,
      name: input.name,
      platform: input.platform,
      environment: input.environment,
      description: input.description ?? null,
      tags: input.tags,
      properties,
      datasetSchema: input.dataset_schema ? { ...storedSchema(input.dataset_schema, input) } : null,
      containerUrn: input.container_urn ?? null,
      writable: input.writable,
      storage: input.storage ?? null,
      contentRevision: 0,
      createdBy: principal.userId,
      createdAt: at,
      updatedAt: at,
    };
    // Row and owner tuple together, so a create is visible to its creator at once (contract §7.3 [I]).
    this.store.atomically(() => {
      if (this.store.byUrn(urn)) throw CatalogErrors.make.dataset_exists({ urn });
      this.store.insert(row);
      this.authz.grantOwnership(principal, object(urn));
    });
    return urn;
  }

  /** `query`: case-insensitive substring of name or URN (contract §7.3). */
  list(principal: Principal, query: string | undefined): DatasetView[] {
    const visible = this.authz.visibleIds(principal, 'dataset');
    const rows = visible === 'all' ? this.store.list() : this.store.byUrns([...visible]);
    const needle = query?.toLowerCase();
    return rows.filter((r) => !needle || r.name.toLowerCase().includes(needle) || r.urn.toLowerCase().includes(needle)).map(datasetView);
  }

  get(principal: Principal, urn: string): DatasetView {
    return datasetView(this.#readable(principal, urn));
  }

  patch(principal: Principal, urn: string, patch: DatasetPatch): DatasetView {
    return this.store.atomically(() => {
      const row = this.#writable(principal, urn, () => CatalogErrors.make.catalog_dataset_not_found());
      const changes: Partial<DatasetRow> = { updatedAt: this.now().toISOString() };
      if (patch.description !== undefined) changes.description = patch.description;
      if (patch.tags !== undefined) changes.tags = patch.tags;
      if (patch.properties !== undefined) {
        changes.properties = mirrorLocation(patch.properties);
        this.#checkSecretRefs(principal, changes.properties, row.properties);
      }
      if (patch.dataset_schema) changes.datasetSchema = { ...storedSchema(patch.dataset_schema, row) };
      if (patch.container_urn !== undefined && (patch.container_urn ?? null) !== row.containerUrn) {
        if (patch.container_urn) this.#checkMembership(principal, patch.container_urn);
        else this.#requireAdminForMembership(principal);
        changes.containerUrn = patch.container_urn ?? null;
      }
      this.store.update(urn, changes);
      return datasetView({ ...row, ...changes });
    });
  }

  delete(principal: Principal, urn: string): void {
    this.store.atomically(() => {
      this.#writable(principal, urn, () => CatalogErrors.make.catalog_dataset_not_found());
      this.store.delete(urn);
      this.authz.deleteObject(object(urn));
    });
  }

  getSchema(principal: Principal, urn: string): StoredSchema {
    const schema = this.#readable(principal, urn).datasetSchema;
    if (!schema) throw CatalogErrors.make.catalog_schema_not_set();
    return schema as unknown as StoredSchema;
  }

  putSchema(principal: Principal, urn: string, body: SchemaBody): StoredSchema {
    return this.store.atomically(() => {
      const row = this.#writable(principal, urn, () => CatalogErrors.make.catalog_schema_update_not_found());
      const schema = storedSchema(body, row);
      this.store.update(urn, { datasetSchema: { ...schema }, updatedAt: this.now().toISOString() });
      return schema;
    });
  }

  #readable(principal: Principal, urn: string): DatasetRow {
    const row = this.store.byUrn(urn);
    if (!row || !this.authz.check(principal, 'viewer', object(urn))) throw CatalogErrors.make.catalog_dataset_not_found();
    return row;
  }

  /** Invisible → 404 (the given string form); visible but not owner → 403 rebac_denied. */
  #writable(principal: Principal, urn: string, notFound: () => Error): DatasetRow {
    const row = this.store.byUrn(urn);
    if (!row || !this.authz.check(principal, 'viewer', object(urn))) throw notFound();
    this.authz.require(principal, 'owner', object(urn));
    return row;
  }

  /**
   * A dataset may name a secret only if its writer may see that secret;
   * otherwise anyone could point a connector at another user's credential.
   * References already present (checked when written) are not re-checked.
   */
  #checkSecretRefs(principal: Principal, next: Record<string, unknown>, previous: Record<string, unknown>): void {
    const before = secretReferences(previous);
    for (const ref of secretReferences(next)) {
      if (!before.has(ref) && !this.secrets.canUse(principal, ref)) throw CatalogErrors.make.secret_reference_forbidden({ secret_urn: ref });
    }
  }

  #checkMembership(principal: Principal, containerUrn: string): void {
    this.#requireAdminForMembership(principal);
    if (!this.containerExists(containerUrn)) throw CatalogErrors.make.container_not_found({ urn: containerUrn });
  }

  #requireAdminForMembership(principal: Principal): void {
    if (!isNativeAdmin(principal)) throw CatalogErrors.make.container_membership_admin_only();
  }
}

/** Dataset access for other domains (retrieval, gates): the same ReBAC rules as the HTTP API. */
export const DATASETS = createServiceKey<DatasetService>('catalogDatasets');
