/**
 * Brokered-user admission on the receiver:
 * the allowlist decides who may enter; the first admitted request mints a
 * local user with a fresh UUID and writes the entry's rendered tuple
 * recipe; later requests map the external id to that same user. The
 * Principal is source=mesh, so admin bypass never applies.
 */
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import type { UserDirectory } from '../auth/index.ts';
import type { AuthzService } from '../authz/index.ts';
import type { AllowlistEntryView, FederationDirectory, FederationRecordView } from '../federation/index.ts';
import type { CallerIdentity } from './identity.ts';

export class Admission {
  /** First requests of one external id share one provisioning (two concurrent ones must not mint two users). */
  readonly #provisioning = new Map<string, Promise<string>>();

  constructor(
    private readonly federations: FederationDirectory,
    private readonly users: UserDirectory,
    private readonly authz: AuthzService,
  ) {}

  async admit(record: FederationRecordView, sourceClusterId: string, identity: CallerIdentity): Promise<Principal> {
    const externalId = `${identity.sub}@${sourceClusterId}`;
    const entry = this.federations.allowlistEntry(record.id, externalId);
    if (!entry) throw MeshErrors.make.unauthorized_brokered_user({ external_id: externalId });
    if (entry.disabled_at) throw MeshErrors.make.revoked_brokered_user({ external_id: externalId });
    const known = entry.local_user_id ? this.users.byId(entry.local_user_id) : undefined;
    // The local record's own switch (PUT /api/auth/users/{id}, `meshgate user disable`), beside the allowlist's.
    if (known?.disabled) throw MeshErrors.make.revoked_brokered_user({ external_id: externalId });
    const userId = known?.id ?? (await this.#provisionOnce(record, entry));
    return Object.freeze({
      userId,
      username: externalId,
      email: null,
      roles: identity.roles,
      attributes: identity.attributes,
      tenantId: DEFAULT_TENANT,
      source: 'mesh' as const,
      authMethod: 'mesh' as const,
      externalId,
      sourceClusterId,
      sourceClusterName: record.remote_cluster_name,
    });
  }

  #provisionOnce(record: FederationRecordView, entry: AllowlistEntryView): Promise<string> {
    const key = `${record.id}\n${entry.external_id}`;
    let pending = this.#provisioning.get(key);
    if (!pending) {
      pending = this.#provision(record, entry).finally(() => this.#provisioning.delete(key));
      this.#provisioning.set(key, pending);
    }
    return pending;
  }

  async #provision(record: FederationRecordView, entry: AllowlistEntryView): Promise<string> {
    const existing = this.users.byExternalId(entry.external_id);
    if (existing?.disabled) throw MeshErrors.make.revoked_brokered_user({ external_id: entry.external_id });
    const user =
      existing ??
      (await this.users.create({
        username: entry.external_id,
        source: 'mesh',
        externalId: entry.external_id,
        roles: [],
      }));
    this.authz.write(this.federations.renderEntryTuples(entry, user.id));
    this.federations.markProvisioned(record.id, entry.external_id, user.id);
    return user.id;
  }
}
