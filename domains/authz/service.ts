/**
 * The authorization service every domain asks: check, list
 * filtering, tuple writes, owner seeding. Transport-free; takes Principals.
 * Admin bypass applies to native administrators only, never to mesh
 * principals.
 */

import { DEFAULT_TENANT, isNativeAdmin, type Principal } from '../../gateway/principal.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { AuthzErrors } from './errors.ts';
import { MODEL, RELATION_BIT, SATISFIED_MASK } from './model.ts';
import type { Tuple, TupleFilter, TupleRow, TupleStore } from './store.ts';

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

/** A delete's match: a null relation matches every relation. */
export type TupleMatch = Omit<TupleInput, 'relation'> & { relation: string | null };

/** Why a check came out as it did (POST /api/auth/check `reason`). */
export interface Decision {
  allow: boolean;
  reason: 'admin_bypass' | 'direct_tuple' | 'implied_by_tuple' | 'no_matching_tuple';
  /** The strongest relation the subject holds on the object, when any. */
  via?: string;
}

export class AuthzService {
  constructor(
    private readonly store: TupleStore,
    private readonly now: () => Date,
  ) {}

  /** May `principal` hold `relation` on `object`? Unknown namespaces or relations are simply false. */
  check(principal: Principal, relation: string, object: ObjectRef): boolean {
    if (isNativeAdmin(principal)) return true;
    const required = SATISFIED_MASK.get(object.namespace)?.get(relation);
    if (required === undefined) return false;
    return (
      (this.store.mask('user', principal.userId, object.namespace, object.id, principal.tenantId) & required) !== 0
    );
  }

  /** Throws 403 rebac_denied when check() is false. */
  require(principal: Principal, relation: string, object: ObjectRef): void {
    if (!this.check(principal, relation, object)) {
      throw AuthzErrors.make.rebac_denied({ relation, object: `${object.namespace}:${object.id}` });
    }
  }

  /** check() with its reason, for the check API. Unknown namespaces/relations throw 403/422 here. */
  decide(principal: Principal, relation: string, object: ObjectRef): Decision {
    validateObject(object);
    const required = requiredMask(object.namespace, relation);
    if (isNativeAdmin(principal)) return { allow: true, reason: 'admin_bypass' };
    const held = this.store.mask('user', principal.userId, object.namespace, object.id, principal.tenantId);
    const via = strongest(object.namespace, held & required);
    if (via === undefined) return { allow: false, reason: 'no_matching_tuple' };
    return { allow: true, reason: via === relation ? 'direct_tuple' : 'implied_by_tuple', via };
  }

  /** Ids of `namespace` objects the principal holds `relation` on; 'all' for native admins (list filtering). */
  visibleIds(principal: Principal, namespace: string, relation = 'viewer'): ReadonlySet<string> | 'all' {
    if (isNativeAdmin(principal)) return 'all';
    const required = SATISFIED_MASK.get(namespace)?.get(relation);
    if (required === undefined) return new Set();
    return new Set(this.store.objectIds('user', principal.userId, namespace, required, principal.tenantId));
  }

  /**
   * Who may change the tuples of an object: a native admin, or an owner of
   * it in the same tenant: an owner delegates access to what it owns without asking an admin.
   */
  requireManager(principal: Principal, object: ObjectRef, tenantId: string): void {
    validateObject(object);
    if (isNativeAdmin(principal)) return;
    if (tenantId !== principal.tenantId || !this.check(principal, 'owner', object)) {
      throw AuthzErrors.make.rebac_denied({ relation: 'owner', object: `${object.namespace}:${object.id}` });
    }
  }

  /**
   * The tuple API's write: validate every tuple, then require manager rights on each object, then write all or none.
   */
  writeAs(principal: Principal, inputs: readonly TupleInput[]): number {
    const tuples = inputs.map(toTuple);
    for (const t of tuples) this.requireManager(principal, { namespace: t.objectNs, id: t.objectId }, t.tenant);
    return this.store.write(tuples, this.now().toISOString());
  }

  deleteAs(principal: Principal, input: TupleMatch): number {
    const match = toMatch(input);
    this.requireManager(principal, input.object, match.tenant);
    return this.store.delete(match);
  }

  deleteObjectAs(principal: Principal, object: ObjectRef, tenantId: string): number {
    this.requireManager(principal, object, tenantId);
    return this.deleteObject(object, tenantId);
  }

  /** Validates against the model, then writes all tuples or none. Returns how many were new. */
  write(inputs: readonly TupleInput[]): number {
    return this.store.write(inputs.map(toTuple), this.now().toISOString());
  }

  /** A null relation deletes every relation the subject holds on the object. */
  delete(input: TupleMatch): number {
    return this.store.delete(toMatch(input));
  }

  deleteObject(object: ObjectRef, tenantId = DEFAULT_TENANT): number {
    validateObject(object);
    return this.store.deleteObject(object.namespace, object.id, tenantId);
  }

  deleteSubject(userId: string): number {
    return this.store.deleteSubject('user', userId);
  }

  /** The creator of an object gets owner on it, which implies the lesser relations. */
  grantOwnership(principal: Principal, object: ObjectRef): void {
    this.write([
      { subject: { namespace: 'user', id: principal.userId }, relation: 'owner', object, tenantId: principal.tenantId },
    ]);
  }

  list(filter: TupleFilter): TupleRow[] {
    return this.store.list(filter);
  }

  /**
   * The tuples a caller may see (GET /api/auth/tuples/): everything for a
   * native admin; otherwise, in the caller's tenant, the caller's own tuples
   * and every tuple on objects the caller owns.
   */
  listVisible(principal: Principal, filter: TupleFilter): TupleRow[] {
    if (filter.objectNs !== undefined) validateNamespace(filter.objectNs);
    if (isNativeAdmin(principal)) return this.list(filter);
    if (filter.tenant !== undefined && filter.tenant !== principal.tenantId) return [];
    const { limit, offset = 0, ...rest } = filter;
    const where = { ...rest, tenant: principal.tenantId };
    const rows = new Map<number, TupleRow>();
    const add = (more: TupleRow[]) => {
      for (const row of more) rows.set(row.rowid, row);
    };
    if (where.subjectId === undefined || where.subjectId === principal.userId) {
      add(this.list({ ...where, subjectNs: 'user', subjectId: principal.userId }));
    }
    for (const namespace of where.objectNs === undefined ? Object.keys(MODEL) : [where.objectNs]) {
      for (const objectId of this.#ownedObjects(principal, namespace, where.objectId))
        add(this.list({ ...where, objectNs: namespace, objectId }));
    }
    const sorted = [...rows.values()].sort((a, b) => a.rowid - b.rowid);
    return sorted.slice(offset, limit === undefined ? undefined : offset + limit);
  }

  /** The objects of `namespace` the caller owns in its tenant (only `wanted`, when given). */
  #ownedObjects(principal: Principal, namespace: string, wanted: string | undefined): string[] {
    const owner = SATISFIED_MASK.get(namespace)?.get('owner');
    if (owner === undefined) return [];
    const owned = this.store.objectIds('user', principal.userId, namespace, owner, principal.tenantId);
    return wanted === undefined ? owned : owned.filter((objectId) => objectId === wanted);
  }

  /** Increases with every change (the resource grants API's `zedtoken`). */
  get revision(): number {
    return this.store.revision;
  }
}

/** 403 namespace_unsupported for a namespace outside the model. */
export function validateNamespace(namespace: string): void {
  if (!MODEL[namespace]) throw AuthzErrors.make.namespace_unsupported({ namespace });
}

/** 403 for an unknown namespace, 422 for a bad object id or a relation the namespace lacks. */
export function validateRelation(object: ObjectRef, relation: string): void {
  validateObject(object);
  requiredMask(object.namespace, relation);
}

function requiredMask(namespace: string, relation: string): number {
  const mask = SATISFIED_MASK.get(namespace)?.get(relation);
  if (mask === undefined) {
    throw AuthzErrors.make.relation_unsupported({
      namespace,
      relation,
      allowed: Object.keys(MODEL[namespace]?.relations ?? {}),
    });
  }
  return mask;
}

/** The first relation in declaration order (owner before editor before viewer) whose bit is set. */
function strongest(namespace: string, mask: number): string | undefined {
  for (const [relation, bit] of RELATION_BIT.get(namespace) ?? []) if ((mask & bit) !== 0) return relation;
  return undefined;
}

/**
 * Validates a delete like a write; a null relation is checked against the namespace's first relation only for shape.
 */
function toMatch(input: TupleMatch): Omit<Tuple, 'relation'> & { relation: string | null } {
  validateNamespace(input.object.namespace);
  const first = Object.keys(MODEL[input.object.namespace]?.relations ?? {})[0] as string;
  return { ...toTuple({ ...input, relation: input.relation ?? first }), relation: input.relation };
}

function validateObject(object: ObjectRef): void {
  validateNamespace(object.namespace);
  const model = MODEL[object.namespace];
  if (!object.id || (model?.fixedObjectId !== undefined && object.id !== model.fixedObjectId)) {
    throw AuthzErrors.make.object_id_invalid({
      namespace: object.namespace,
      id: object.id,
      ...(model?.fixedObjectId ? { expected: model.fixedObjectId } : {}),
    });
  }
}

function toTuple(input: TupleInput): Tuple {
  validateObject(input.object);
  if (input.subject.namespace !== 'user' || !input.subject.id) {
    throw AuthzErrors.make.relation_unsupported({ subject_namespace: input.subject.namespace });
  }
  requiredMask(input.object.namespace, input.relation);
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
