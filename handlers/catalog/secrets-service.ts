/**
 * Secrets (contract §7.5): metadata through the API, values only through
 * the in-process SECRETS service (connectors). Who may see and delete a
 * secret — our rule, since the ReBAC model has no secret namespace: its
 * owner (the local user who created it, or the user an administrator named
 * as `owner`) and native administrators. Everyone else gets 404, so names
 * are not probed. Mesh callers are refused at the route (nativeOnly).
 */
import { createServiceKey } from '../../gateway/services.ts';
import { isNativeAdmin, type Principal } from '../principal.ts';
import { decryptSecret, encryptSecret } from './crypto.ts';
import { CatalogErrors } from './errors.ts';
import type { KeyManager } from './keys.ts';
import type { SecretRow, SecretStore } from './secrets-store.ts';
import { secretUrn } from './urn.ts';

const USER_PREFIX = 'urn:li:corpuser:';

export interface SecretView {
  urn: string;
  name: string;
  value: null;
  owner: string;
  description: string | null;
  workroom_id: null;
  created_at: string;
  updated_at: string;
}

export interface SecretInput {
  name: string;
  value: string;
  owner?: string | null | undefined;
  description?: string | null | undefined;
}

/** Local users by username, for `owner`; the slice of USER_DIRECTORY this service needs. */
export interface OwnerLookup {
  localUserId(username: string): string | undefined;
}

/** What other domains (retrieval connectors) may use; never routed to HTTP. */
export interface SecretsAccess {
  /** The plaintext value. In-process only: never put it in a response, a log line or an error. */
  reveal(urn: string): string;
  /** May `principal` see this secret (and so reference it from a dataset)? False when absent. */
  canUse(principal: Principal, urn: string): boolean;
}

export const SECRETS = createServiceKey<SecretsAccess>('catalogSecrets');

export class SecretsService implements SecretsAccess {
  constructor(
    private readonly store: SecretStore,
    private readonly keys: KeyManager,
    private readonly owners: OwnerLookup,
    private readonly now: () => Date,
  ) {}

  create(principal: Principal, input: SecretInput, clobber: boolean, headerOwner: string | null): string {
    const urn = secretUrn(input.name);
    const at = this.now().toISOString();
    this.store.atomically(() => {
      const existing = this.store.byUrn(urn);
      if (existing && !(clobber && this.#mayManage(principal, existing))) throw CatalogErrors.make.secret_exists({ urn });
      const owner = this.#owner(principal, input.owner ?? headerOwner ?? existing?.owner ?? `${USER_PREFIX}${principal.username}`);
      // Wrap under the active KEK inside the write lock, so a concurrent rotation cannot retire it first.
      const envelope = encryptSecret(urn, input.value, this.keys.active());
      this.store.upsert({
        urn,
        name: input.name,
        description: input.description ?? null,
        owner: owner.urn,
        ownerId: owner.id,
        ...envelope,
        createdAt: existing?.createdAt ?? at,
        updatedAt: at,
      });
    });
    return urn;
  }

  list(principal: Principal, query: string | undefined): SecretView[] {
    const needle = query?.toLowerCase();
    return this.store
      .list()
      .filter((row) => this.#mayManage(principal, row))
      .filter((row) => !needle || row.name.toLowerCase().includes(needle) || row.urn.toLowerCase().includes(needle))
      .map(view);
  }

  get(principal: Principal, urn: string): SecretView {
    return view(this.#visible(principal, urn));
  }

  delete(principal: Principal, urn: string): void {
    this.store.atomically(() => {
      this.#visible(principal, urn);
      this.store.delete(urn);
    });
  }

  reveal(urn: string): string {
    const row = this.store.byUrn(urn);
    if (!row) throw CatalogErrors.make.secret_not_found({ urn });
    try {
      return decryptSecret(urn, row, this.keys.get(row.kekVersion));
    } catch (error) {
      // The cause is a crypto or key-file failure; it never holds the value.
      throw CatalogErrors.make.secret_unreadable({ urn }, error);
    }
  }

  canUse(principal: Principal, urn: string): boolean {
    const row = this.store.byUrn(urn);
    return row !== undefined && this.#mayManage(principal, row);
  }

  #visible(principal: Principal, urn: string): SecretRow {
    const row = this.store.byUrn(urn);
    if (!row || !this.#mayManage(principal, row)) throw CatalogErrors.make.secret_not_found({ urn });
    return row;
  }

  #mayManage(principal: Principal, row: SecretRow): boolean {
    return isNativeAdmin(principal) || (principal.source === 'local' && row.ownerId === principal.userId);
  }

  /** Non-administrators may name only themselves; administrators any local user. */
  #owner(principal: Principal, ownerUrn: string): { urn: string; id: string } {
    if (!ownerUrn.startsWith(USER_PREFIX)) throw CatalogErrors.make.secret_owner_unknown({ owner: ownerUrn });
    const username = ownerUrn.slice(USER_PREFIX.length);
    if (username === principal.username && principal.source === 'local') return { urn: ownerUrn, id: principal.userId };
    if (!isNativeAdmin(principal)) throw CatalogErrors.make.secret_owner_forbidden({ owner: ownerUrn });
    const id = this.owners.localUserId(username);
    if (!id) throw CatalogErrors.make.secret_owner_unknown({ owner: ownerUrn });
    return { urn: ownerUrn, id };
  }
}

function view(row: SecretRow): SecretView {
  return {
    urn: row.urn,
    name: row.name,
    value: null,
    owner: row.owner,
    description: row.description,
    workroom_id: null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}
