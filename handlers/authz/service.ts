/**
 * The authorization service every domain asks (issue 4): check, list
 * filtering, tuple writes, owner seeding. Transport-free; takes Principals.
 * Admin bypass applies to native administrators only, never to mesh
 * principals (spec: Authentication 5).
 */
import { createServiceKey } from '../../gateway/services.ts';
import { DEFAULT_TENANT, isNativeAdmin, type Principal } from '../principal.ts';
import { AuthzErrors } from './errors.ts';
import { MODEL, SATISFIED_BY } from './model.ts';
import type { Tuple, TupleStore } from './store.ts';

export interface ObjectRef {
  readonly namespace: string;
  readonly id: string;
}

export interface TupleInput {
  subject: { namespace: string; id: string };
  relation: string;
  object: ObjectRef;
  tenantId?: string | undefined;
}

export class AuthzService {
  constructor(
    private readonly store: TupleStore,
    private readonly now: () => Date,
  ) {}

  /** May `principal` hold `relation` on `object`? Unknown namespaces or relations are simply false. */
  check(principal: Principal, relation: string, object: ObjectRef): boolean {
    if (isNativeAdmin(principal)) return true;
    const relations = SATISFIED_BY.get(object.namespace)?.get(relation);
    if (!relations) return false;
    return this.store.hasAny('user', principal.userId, object.namespace, object.id, relations, principal.tenantId);
  }

  /** Throws 403 rebac_denied (contract §4.5 step 6) when check() is false. */
  require(principal: Principal, relation: string, object: ObjectRef): void {
    if (!this.check(principal, relation, object)) {
      throw AuthzErrors.make.rebac_denied({ relation, object: `${object.namespace}:${object.id}` });
    }
  }

  /** Ids of `namespace` objects the principal holds `relation` on; 'all' for native admins (list filtering). */
  visibleIds(principal: Principal, namespace: string, relation = 'viewer'): ReadonlySet<string> | 'all' {
    if (isNativeAdmin(principal)) return 'all';
    const relations = SATISFIED_BY.get(namespace)?.get(relation);
    if (!relations) return new Set();
    return new Set(this.store.objectIds('user', principal.userId, namespace, relations, principal.tenantId));
  }

  /** Validates against the model, then writes all tuples or none. */
  write(inputs: readonly TupleInput[]): void {
    this.store.write(inputs.map(toTuple), this.now().toISOString());
  }

  delete(input: Omit<TupleInput, 'relation'> & { relation: string | null }): number {
    const tuple = toTuple({ ...input, relation: input.relation ?? firstRelation(input.object.namespace) });
    return this.store.delete({ ...tuple, relation: input.relation });
  }

  deleteObject(object: ObjectRef, tenantId = DEFAULT_TENANT): number {
    validateObject(object);
    return this.store.deleteObject(object.namespace, object.id, tenantId);
  }

  deleteSubject(userId: string): number {
    return this.store.deleteSubject('user', userId);
  }

  /** The creator of an object gets owner on it (issue 4 item 6), which implies the lesser relations. */
  grantOwnership(principal: Principal, object: ObjectRef): void {
    this.write([{ subject: { namespace: 'user', id: principal.userId }, relation: 'owner', object, tenantId: principal.tenantId }]);
  }

  list(filter: Partial<Tuple>): Tuple[] {
    return this.store.list(filter);
  }
}

function firstRelation(namespace: string): string {
  const model = MODEL[namespace];
  if (!model) throw AuthzErrors.make.namespace_unsupported({ namespace });
  return Object.keys(model.relations)[0] as string;
}

function validateObject(object: ObjectRef): void {
  const model = MODEL[object.namespace];
  if (!model) throw AuthzErrors.make.namespace_unsupported({ namespace: object.namespace });
  if (!object.id || (model.fixedObjectId !== undefined && object.id !== model.fixedObjectId)) {
    throw AuthzErrors.make.object_id_invalid({ namespace: object.namespace, id: object.id, ...(model.fixedObjectId ? { expected: model.fixedObjectId } : {}) });
  }
}

function toTuple(input: TupleInput): Tuple {
  validateObject(input.object);
  if (input.subject.namespace !== 'user' || !input.subject.id) {
    throw AuthzErrors.make.relation_unsupported({ subject_namespace: input.subject.namespace });
  }
  if (!SATISFIED_BY.get(input.object.namespace)?.has(input.relation)) {
    throw AuthzErrors.make.relation_unsupported({
      namespace: input.object.namespace,
      relation: input.relation,
      allowed: Object.keys(MODEL[input.object.namespace]?.relations ?? {}),
    });
  }
  return {
    subjectNs: input.subject.namespace,
    subjectId: input.subject.id,
    relation: input.relation,
    objectNs: input.object.namespace,
    objectId: input.object.id,
    tenant: input.tenantId ?? DEFAULT_TENANT,
  };
}

export const AUTHZ = createServiceKey<AuthzService>('authz');
