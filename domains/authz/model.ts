/**
 * The ReBAC model, declared as data.
 * Each namespace lists its relations and, for each, the relations
 * that imply it (owner ⊇ editor ⊇ viewer). The checker evaluates this
 * table; there are no namespace-specific branches anywhere else.
 */
export interface NamespaceModel {
  /** relation → relations that also grant it (direct implication; closure computed below). */
  readonly relations: Readonly<Record<string, readonly string[]>>;
  /** A fixed object id, when the namespace has exactly one object (cluster_jobs: `__all__`). */
  readonly fixedObjectId?: string;
}

/** Relations are declared strongest first; the check API names the first one held as `via`. */
export const MODEL: Readonly<Record<string, NamespaceModel>> = {
  federation: { relations: { owner: [], operator: ['owner'], viewer: ['operator'] } },
  dataset: { relations: { owner: [], editor: ['owner'], viewer: ['editor'] } },
  model: { relations: { owner: [], editor: ['owner'], viewer: ['editor'] } },
  app: { relations: { owner: [], editor: ['owner'], viewer: ['editor'] } },
  tool: { relations: { owner: [], editor: ['owner'], viewer: ['editor'] } },
  cluster_jobs: { relations: { executor: [] }, fixedObjectId: '__all__' },
  cluster: { relations: { owner: [], viewer: ['owner'] } },
};

/** Subject namespaces a tuple may name. */
export const SUBJECT_NAMESPACES = ['user'] as const;

/** For each namespace and relation, every relation whose tuple satisfies it (itself included). */
export const SATISFIED_BY: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>> = compileClosure(MODEL);

function compileClosure(model: Readonly<Record<string, NamespaceModel>>): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  for (const [namespace, { relations }] of Object.entries(model)) {
    out.set(
      namespace,
      new Map(Object.keys(relations).map((relation) => [relation, impliers(namespace, relations, relation)])),
    );
  }
  return out;
}

/** `relation` and every relation that implies it, directly or through others (breadth first). */
function impliers(namespace: string, relations: NamespaceModel['relations'], relation: string): string[] {
  const seen = new Set<string>([relation]);
  const queue = [relation];
  while (queue.length > 0) {
    for (const implier of relations[queue.shift() as string] ?? []) {
      if (!relations[implier]) throw new Error(`model: ${namespace}#${implier} is not a relation`);
      if (seen.has(implier)) continue;
      seen.add(implier);
      queue.push(implier);
    }
  }
  return [...seen];
}

/**
 * The same closure as bit masks, for the in-memory index: each relation of a
 * namespace gets one bit (declaration order); a check needs any bit of the
 * mask of the relations that satisfy it.
 */
export const RELATION_BIT: ReadonlyMap<string, ReadonlyMap<string, number>> = new Map(
  Object.entries(MODEL).map(([namespace, { relations }]) => [
    namespace,
    new Map(Object.keys(relations).map((r, i) => [r, 1 << i])),
  ]),
);

export const SATISFIED_MASK: ReadonlyMap<string, ReadonlyMap<string, number>> = new Map(
  [...SATISFIED_BY].map(([namespace, closures]) => {
    const bits = RELATION_BIT.get(namespace) as ReadonlyMap<string, number>;
    return [
      namespace,
      new Map([...closures].map(([relation, by]) => [relation, by.reduce((mask, r) => mask | (bits.get(r) ?? 0), 0)])),
    ];
  }),
);

export function isKnownRelation(namespace: string, relation: string): boolean {
  return SATISFIED_BY.get(namespace)?.has(relation) ?? false;
}
