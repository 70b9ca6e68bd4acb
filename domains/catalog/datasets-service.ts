/**
 * Datasets. ReBAC on `dataset:<urn>`:
 * viewer (or editor, owner) reads metadata and schema; owner writes and
 * deletes; the creator becomes owner. A dataset the caller cannot view is
 * 404, one it can view but not write is 403 `rebac_denied`. Mesh principals
 * see only what this (receiving) cluster granted them: AUTHZ gives them no
 * admin bypass. Transport-free.
 *
 * Secret references in `properties` are bound, when the dataset is written,
 * to the id of the secret each URN names then (catalog_dataset_secrets).
 * A use (`forUse`, what retrieval reads through) resolves them by that id
 * only and re-checks that the user who bound each one may still use its
 * secret — the policy is evaluated at use, not only when the reference was
 * written.
 */
import { isDeepStrictEqual } from 'node:util';
import { isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import type { AuthzService } from '../authz/index.ts';
import type { DatasetRow, DatasetStore, SecretBinding } from './datasets-store.ts';
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
import type { SecretBinder } from './secrets-service.ts';
import { boundSecretReference, datasetUrn, mapSecretReferences, secretReferences } from './urn.ts';

const object = (urn: string) => ({ namespace: 'dataset', id: urn });

export class DatasetService {
  constructor(
    private readonly store: DatasetStore,
    private readonly containerExists: (urn: string) => boolean,
    private readonly authz: AuthzService,
    private readonly secrets: SecretBinder,
    private readonly now: () => Date,
  ) {}

  create(principal: Principal, input: DatasetCreate): string {
    const urn = datasetUrn({ platform: input.platform, name: input.name, environment: input.environment });
    const properties = mirrorLocation(input.properties);
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
    // Row and owner tuple together, so a create is visible to its creator at once.
    this.store.atomically(() => {
      if (this.store.byUrn(urn)) throw CatalogErrors.make.dataset_exists({ urn });
      const bindings = this.#bindSecrets(principal, properties, {}, new Map());
      this.store.insert(row);
      this.store.setSecretBindings(urn, bindings);
      this.authz.grantOwnership(principal, object(urn));
    });
    return urn;
  }

  /** `query`: case-insensitive substring of name or URN. */
  list(principal: Principal, query: string | undefined): DatasetView[] {
    const visible = this.authz.visibleIds(principal, 'dataset');
    const rows = visible === 'all' ? this.store.list() : this.store.byUrns([...visible]);
    const needle = query?.toLowerCase();
    return rows
      .filter((r) => !needle || r.name.toLowerCase().includes(needle) || r.urn.toLowerCase().includes(needle))
      .map(datasetView);
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
        const bindings = this.#bindSecrets(
          principal,
          changes.properties,
          row.properties,
          this.store.secretBindings(urn),
        );
        this.store.setSecretBindings(urn, bindings);
      }
      if (patch.dataset_schema) changes.datasetSchema = { ...storedSchema(patch.dataset_schema, row) };
      if (patch.container_urn !== undefined) this.#moveContainer(principal, row, patch.container_urn, changes);
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

  /**
   * The dataset as a connector uses it: readable by `principal` (else 404),
   * every secret reference in `properties` replaced by its bound form
   * (`<urn>#<secret id>`, what SECRETS.reveal takes). A reference without a
   * binding, bound to a deleted secret, or to one the user who bound it may
   * no longer use is 409 `secret_unavailable` — never a lookup by name.
   */
  forUse(principal: Principal, urn: string): DatasetView {
    const row = this.#readable(principal, urn);
    const bindings = this.store.secretBindings(urn);
    const properties = mapSecretReferences(row.properties, (reference) => {
      const binding = bindings.get(reference);
      if (!binding || !this.secrets.usableBy(binding.boundBy, binding.secretId)) {
        throw CatalogErrors.make.secret_unavailable({ secret_urn: reference });
      }
      return boundSecretReference(reference, binding.secretId);
    });
    return datasetView({ ...row, properties });
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

  /** A change of container (null: out of any) needs the right to place the dataset there; the same one is no change. */
  #moveContainer(
    principal: Principal,
    row: DatasetRow,
    containerUrn: string | null,
    changes: Partial<DatasetRow>,
  ): void {
    if (containerUrn === row.containerUrn) return;
    if (containerUrn) this.#checkMembership(principal, containerUrn);
    else this.#requireAdminForMembership(principal);
    changes.containerUrn = containerUrn;
  }

  #readable(principal: Principal, urn: string): DatasetRow {
    const row = this.store.byUrn(urn);
    if (!row || !this.authz.check(principal, 'viewer', object(urn)))
      throw CatalogErrors.make.catalog_dataset_not_found();
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
   * Binds each secret reference of `next` to the secret its URN names now,
   * which the writer must be able to use (the secret's owner or a native
   * admin), recording the writer as the binder; otherwise anyone could point
   * a connector at another user's credential. A reference already present
   * that the writer cannot bind (someone else's secret, or one deleted since)
   * keeps its binding, dead or alive, only when the properties are otherwise
   * unchanged: host, port, endpoint, API URL and the rest decide where the
   * credential goes, and that stays the binder's choice. A new reference the
   * writer cannot bind, or a kept one with other properties changed, is 403
   * `secret_reference_forbidden`, for absent and foreign secrets alike.
   */
  #bindSecrets(
    principal: Principal,
    next: Record<string, unknown>,
    previous: Record<string, unknown>,
    previousBindings: ReadonlyMap<string, SecretBinding>,
  ): Map<string, SecretBinding> {
    const before = secretReferences(previous);
    const bindings = new Map<string, SecretBinding>();
    for (const reference of secretReferences(next)) {
      const secretId = this.secrets.bindable(principal, reference);
      const kept = previousBindings.get(reference);
      if (secretId) bindings.set(reference, { secretId, boundBy: principal.userId });
      else if (before.has(reference) && isDeepStrictEqual(next, previous)) {
        if (kept) bindings.set(reference, kept);
      } else throw CatalogErrors.make.secret_reference_forbidden({ secret_urn: reference });
    }
    return bindings;
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
