/**
 * Containers: URN-identified groups of datasets. Creation,
 * listing, updates, deletion and membership are native-admin operations
 * (enforced at the route). Reading one container is
 * open to local users, with its member datasets filtered by their ReBAC
 * visibility, so a container never reveals a dataset its reader cannot see.
 */

import type { Principal } from '../../gateway/principal.ts';
import type { AuthzService } from '../authz/index.ts';
import type { ContainerRow, ContainerStore } from './containers-store.ts';
import {
  type ContainerCreate,
  type ContainerPatch,
  containerView,
  decodeCursor,
  encodeCursor,
  type MemberPage,
} from './containers-wire.ts';
import type { DatasetStore } from './datasets-store.ts';
import { CatalogErrors } from './errors.ts';
import { containerUrn } from './urn.ts';

export interface PageRequest {
  cursor: string | undefined;
  size: number;
}

export class ContainerService {
  constructor(
    private readonly store: ContainerStore,
    private readonly datasets: DatasetStore,
    private readonly authz: AuthzService,
    private readonly now: () => Date,
  ) {}

  exists(urn: string): boolean {
    return this.store.byUrn(urn) !== undefined;
  }

  create(input: ContainerCreate): string {
    const urn = containerUrn(input.platform ?? 'platform', input.name);
    const at = this.now().toISOString();
    this.datasets.atomically(() => {
      if (this.store.byUrn(urn)) throw CatalogErrors.make.container_exists({ urn });
      if (input.parent_urn) this.#checkParent(urn, input.parent_urn);
      this.store.insert({
        urn,
        name: input.name,
        platform: input.platform ?? null,
        description: input.description ?? null,
        tags: input.tags,
        properties: input.properties,
        parentUrn: input.parent_urn ?? null,
        createdAt: at,
        updatedAt: at,
      });
    });
    return urn;
  }

  list(principal: Principal, query: string | undefined, page: PageRequest) {
    const needle = query?.toLowerCase();
    return this.store
      .list()
      .filter((r) => !needle || r.name.toLowerCase().includes(needle) || r.urn.toLowerCase().includes(needle))
      .map((row) => this.#view(principal, row, page));
  }

  get(principal: Principal, urn: string, page: PageRequest) {
    return this.#view(principal, this.#row(urn), page);
  }

  patch(principal: Principal, urn: string, patch: ContainerPatch) {
    return this.datasets.atomically(() => {
      const row = this.#row(urn);
      const changes: Partial<ContainerRow> = { updatedAt: this.now().toISOString() };
      if (patch.name !== undefined) changes.name = patch.name;
      if (patch.description !== undefined) changes.description = patch.description;
      if (patch.tags !== undefined) changes.tags = patch.tags;
      if (patch.properties !== undefined) changes.properties = patch.properties;
      if (patch.parent_urn !== undefined) {
        if (patch.parent_urn) this.#checkParent(urn, patch.parent_urn);
        changes.parentUrn = patch.parent_urn ?? null;
      }
      this.store.update(urn, changes);
      return this.#view(principal, { ...row, ...changes }, { cursor: undefined, size: 100 });
    });
  }

  /** Members are detached (their container_urn cleared), not deleted. */
  delete(urn: string): void {
    this.datasets.atomically(() => {
      this.#row(urn);
      const at = this.now().toISOString();
      this.datasets.detachAll(urn, at);
      this.store.delete(urn, at);
    });
  }

  addDataset(urn: string, datasetUrn: string): void {
    this.datasets.atomically(() => {
      this.#row(urn);
      if (!this.datasets.byUrn(datasetUrn)) throw CatalogErrors.make.catalog_dataset_not_found();
      this.datasets.update(datasetUrn, { containerUrn: urn, updatedAt: this.now().toISOString() });
    });
  }

  removeDataset(urn: string, datasetUrn: string): void {
    this.datasets.atomically(() => {
      this.#row(urn);
      if (this.datasets.byUrn(datasetUrn)?.containerUrn !== urn)
        throw CatalogErrors.make.dataset_not_in_container({ urn, dataset_urn: datasetUrn });
      this.datasets.update(datasetUrn, { containerUrn: null, updatedAt: this.now().toISOString() });
    });
  }

  #row(urn: string): ContainerRow {
    const row = this.store.byUrn(urn);
    if (!row) throw CatalogErrors.make.container_not_found({ urn });
    return row;
  }

  /** The parent must exist and must not be the container or one of its descendants. */
  #checkParent(urn: string, parentUrn: string): void {
    const seen = new Set<string>();
    for (let at: string | null = parentUrn; at !== null; at = this.#row(at).parentUrn) {
      if (at === urn || seen.has(at)) throw CatalogErrors.make.container_parent_invalid({ parent_urn: parentUrn });
      seen.add(at);
    }
  }

  #view(principal: Principal, row: ContainerRow, page: PageRequest) {
    return containerView(row, this.store.children(row.urn), this.#members(principal, row.urn, page));
  }

  /** One page of visible member URNs, in URN order; the cursor is the last URN returned. */
  #members(principal: Principal, urn: string, page: PageRequest): MemberPage {
    const visible = this.authz.visibleIds(principal, 'dataset');
    const out: string[] = [];
    let after = decodeCursor(page.cursor);
    for (;;) {
      const batch = this.datasets.memberUrns(urn, after, Math.max(64, page.size + 1));
      for (const member of batch) {
        if (visible === 'all' || visible.has(member)) out.push(member);
        if (out.length > page.size)
          return { datasets: out.slice(0, page.size), next: encodeCursor(out[page.size - 1] as string) };
      }
      if (batch.length === 0) return { datasets: out, next: null };
      after = batch[batch.length - 1] as string;
    }
  }
}
