/**
 * The subjects API's logic: operators and
 * tests seed local users with custom attributes (carried into that user's
 * next tokens as top-level claims, so into X-User-Attributes) and grant
 * them relations in the flat form. Transport-free; the route layer gates it
 * to native administrators.
 */

import type { z } from 'zod';
import { DEFAULT_TENANT, type Principal } from '../../gateway/principal.ts';
import type { UserDirectory } from '../auth/index.ts';
import { AuthzErrors } from './errors.ts';
import { grantView, type subjectAnswer } from './response-wire.ts';
import type { AuthzService, ObjectRef, TupleInput } from './service.ts';
import type { TupleRow } from './store.ts';

type UserRow = NonNullable<ReturnType<UserDirectory['resolve']>>;

export interface SubjectUpsert {
  attributes?: Record<string, unknown> | undefined;
  password?: string | undefined;
}

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/;
/** A uuid in the path addresses an existing user; it never becomes a new username. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class SubjectsService {
  constructor(
    private readonly users: UserDirectory,
    private readonly authz: AuthzService,
  ) {}

  /**
   * PUT: creates the user named by `idOrUsername` when absent; replaces attributes when given (checked by the directory
   * against the vocabulary).
   */
  async upsert(
    idOrUsername: string,
    input: SubjectUpsert,
  ): Promise<{ created: boolean; subject: ReturnType<SubjectsService['view']> }> {
    const existing = this.users.resolve(idOrUsername);
    if (!existing) {
      if (UUID.test(idOrUsername)) throw AuthzErrors.make.subject_not_found({ subject: idOrUsername });
      if (!USERNAME.test(idOrUsername)) throw AuthzErrors.make.subject_name_invalid({ username: idOrUsername });
      const row = await this.users.create({
        username: idOrUsername,
        password: input.password ?? null,
        attributes: input.attributes ?? {},
      });
      return { created: true, subject: this.view(row) };
    }
    if (existing.source === 'mesh') throw AuthzErrors.make.subject_is_brokered({ id: existing.id });
    if (input.attributes !== undefined) this.users.update(existing.id, { attributes: input.attributes });
    if (input.password !== undefined) await this.users.setPassword(existing.id, input.password);
    return { created: false, subject: this.view(this.#find(existing.id)) };
  }

  get(idOrUsername: string) {
    return this.view(this.#find(idOrUsername));
  }

  grants(idOrUsername: string): TupleRow[] {
    return this.authz.list({ subjectNs: 'user', subjectId: this.#find(idOrUsername).id });
  }

  /** Returns the stored grant (201). Writing an existing grant is not an error. */
  grant(idOrUsername: string, input: Omit<TupleInput, 'subject'>): TupleRow {
    const user = this.#find(idOrUsername);
    const tuple = { ...input, subject: { namespace: 'user', id: user.id } };
    this.authz.write([tuple]);
    return this.#stored(user.id, input.object, input.relation, input.tenantId ?? DEFAULT_TENANT);
  }

  revoke(idOrUsername: string, input: Omit<TupleInput, 'subject'>): number {
    const user = this.#find(idOrUsername);
    return this.authz.delete({ ...input, subject: { namespace: 'user', id: user.id } });
  }

  /**
   * DELETE: refuses while grants remain unless `cascade`. The user goes
   * first: should the grant delete then fail, the leftover tuples name a
   * uuid no user will ever have again, so they can match nobody.
   */
  remove(caller: Principal, idOrUsername: string, cascade: boolean): void {
    const user = this.#find(idOrUsername);
    if (user.id === caller.userId) throw AuthzErrors.make.subject_is_caller({ id: user.id });
    const held = this.authz.list({ subjectNs: 'user', subjectId: user.id }).length;
    if (held > 0 && !cascade) throw AuthzErrors.make.subject_has_grants({ id: user.id, grants: held });
    this.users.delete(user.id);
    this.authz.deleteSubject(user.id);
  }

  /**
   * The principal a check evaluates for a subject named by id (POST
   * /auth/check about someone else): roles and source as stored, so a
   * native admin still bypasses and a brokered user never does. Unknown ids
   * evaluate with no roles: their tuples match only that exact id.
   */
  principalFor(subjectId: string, tenantId: string): Principal {
    const user = this.users.byId(subjectId);
    return {
      userId: subjectId,
      username: user?.username ?? subjectId,
      email: user?.email ?? null,
      roles: user && !user.disabled ? user.roles : [],
      attributes: user?.attributes ?? {},
      tenantId,
      source: user?.source ?? 'local',
      authMethod: user?.source === 'mesh' ? 'mesh' : 'jwt',
    };
  }

  view(user: UserRow): z.output<typeof subjectAnswer> {
    return {
      id: user.id,
      username: user.username,
      attributes: user.attributes,
      source: user.source,
      grants: this.authz.list({ subjectNs: 'user', subjectId: user.id }).map(grantView),
      created_at: user.createdAt,
      updated_at: user.updatedAt,
    };
  }

  #find(idOrUsername: string): UserRow {
    const user = this.users.resolve(idOrUsername);
    if (!user) throw AuthzErrors.make.subject_not_found({ subject: idOrUsername });
    return user;
  }

  #stored(userId: string, object: ObjectRef, relation: string, tenant: string): TupleRow {
    const [row] = this.authz.list({
      subjectNs: 'user',
      subjectId: userId,
      objectNs: object.namespace,
      objectId: object.id,
      relation,
      tenant,
    });
    return row as TupleRow;
  }
}
