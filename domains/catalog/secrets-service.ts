/**
 * Secrets: metadata through the API, values only through
 * the in-process SECRETS service (connectors). Who may see and delete a
 * secret — our rule, since the ReBAC model has no secret namespace: its
 * owner (the local user who created it, or the user an administrator named
 * as `owner`) and native administrators. Everyone else gets 404, so names
 * are not probed. Mesh callers are refused at the route (nativeOnly).
 *
 * Each secret has an immutable random id besides its URN (a name). Datasets
 * bind their references to that id when written, and a value is revealed by
 * id only, so deleting a secret and creating another under the same name
 * never hands the new value to the old references (the role Vault's
 * accessors play: a handle to one secret, not to whatever holds a path).
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { decryptSecret, encryptSecret } from './crypto.ts';
import { CatalogErrors } from './errors.ts';
import type { KeyManager } from './keys.ts';
import type { SecretRow, SecretStore } from './secrets-store.ts';
import { parseBoundSecretReference, secretUrn } from './urn.ts';

const USER_PREFIX = 'urn:li:corpuser:';

/** The `Secret` answer: its metadata, never its value (always null). The view is typed by it. */
export const secretAnswer = z.object({
  urn: z.string(),
  name: z.string(),
  value: z.null(),
  owner: z.string(),
  description: z.string().nullable(),
  workroom_id: z.null(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SecretView = z.output<typeof secretAnswer>;

export interface SecretInput {
  name: string;
  value: string;
  owner?: string | null | undefined;
  description?: string | null | undefined;
}

/** The user facts a secret check needs, as the user directory holds them now. */
export interface SecretUser {
  userId: string;
  source: Principal['source'];
  roles: readonly string[];
  disabled: boolean;
}

/** Local users by username (for `owner`) and by id (a dataset's owner at use): the slice of USER_DIRECTORY used. */
export interface OwnerLookup {
  localUserId(username: string): string | undefined;
  user(id: string): SecretUser | undefined;
}

/** What other domains (retrieval connectors) may use; never routed to HTTP. */
export interface SecretsAccess {
  /**
   * The plaintext value of the secret a bound reference names (a dataset
   * reference as the catalog hands it out for one use: `<urn>#<secret id>`).
   * A plain URN is refused: values are reached by id only. In-process only:
   * never put the value in a response, a log line or an error.
   */
  reveal(boundReference: string): string;
  /** May `principal` see this secret (and so reference it from a dataset)? False when absent. */
  canUse(principal: Principal, urn: string): boolean;
}

export const SECRETS = createServiceKey<SecretsAccess>('catalogSecrets');

/** What the dataset service needs to bind references when a dataset is written and to re-check them at use. */
export interface SecretBinder {
  /** The id of the secret `urn` names now, when `principal` may use it (the canUse rule); else null. */
  bindable(principal: Principal, urn: string): string | null;
  /** May the local user `userId` still use the secret with this id? False when either is gone. */
  usableBy(userId: string, secretId: string): boolean;
}

export class SecretsService implements SecretsAccess, SecretBinder {
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
      if (existing && !(clobber && this.#mayManage(principal, existing)))
        throw CatalogErrors.make.secret_exists({ urn });
      const owner = this.#owner(
        principal,
        input.owner ?? headerOwner ?? existing?.owner ?? `${USER_PREFIX}${principal.username}`,
      );
      // Wrap under the active KEK inside the write lock, so a concurrent rotation cannot retire it first.
      const envelope = encryptSecret(urn, input.value, this.keys.active());
      this.store.upsert({
        urn,
        // A value update keeps the id, so datasets bound to this secret follow it; a new secret gets a new one.
        id: existing?.id ?? randomUUID(),
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

  reveal(boundReference: string): string {
    const bound = parseBoundSecretReference(boundReference);
    const row = bound ? this.store.byId(bound.secretId) : undefined;
    if (!bound || !row) throw CatalogErrors.make.secret_unavailable({ secret_urn: bound?.reference ?? boundReference });
    try {
      return decryptSecret(row.urn, row, this.keys.get(row.kekVersion));
    } catch (error) {
      // The cause is a crypto or key-file failure; it never holds the value.
      throw CatalogErrors.make.secret_unreadable({ urn: row.urn }, error);
    }
  }

  canUse(principal: Principal, urn: string): boolean {
    return this.bindable(principal, urn) !== null;
  }

  bindable(principal: Principal, urn: string): string | null {
    const row = this.store.byUrn(urn);
    return row && this.#mayManage(principal, row) ? row.id : null;
  }

  usableBy(userId: string, secretId: string): boolean {
    const user = this.owners.user(userId);
    const row = this.store.byId(secretId);
    // A disabled user can no longer act, so what rests on their authority stops too.
    return user !== undefined && !user.disabled && row !== undefined && this.#mayManage(user, row);
  }

  #visible(principal: Principal, urn: string): SecretRow {
    const row = this.store.byUrn(urn);
    if (!row || !this.#mayManage(principal, row)) throw CatalogErrors.make.secret_not_found({ urn });
    return row;
  }

  #mayManage(principal: Pick<Principal, 'userId' | 'source' | 'roles'>, row: SecretRow): boolean {
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
