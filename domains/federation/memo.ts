/**
 * The mesh hot path's read cache (mesh p50 within 2 ms of
 * a local call). Every signed request looked up the record by source
 * cluster, the PAIRED list, the peer agent's record and the allowlist entry
 * — each a drizzle query built from scratch. Both stores bump one in-process
 * change counter on every insert and update (all writes to these tables go
 * through them: the federation API, the peer protocol, pairing, admission),
 * and each memo drops everything when the counter moved, so a revoke,
 * disconnect or delete is seen by the very next request.
 */
export class ChangeCounter {
  #value = 0;

  get value(): number {
    return this.#value;
  }

  bump(): void {
    this.#value++;
  }
}

/** Keys can come from unauthenticated headers (a claimed source cluster id): the map stays bounded. */
const MAX_ENTRIES = 1024;

/** `load(key)`, remembered until the next write. Values are shared by every caller: hand out frozen views. */
export function memoize<V>(changes: ChangeCounter, load: (key: string) => V): (key: string) => V {
  let seen = changes.value;
  const values = new Map<string, V>();
  return (key) => {
    if (seen !== changes.value || values.size >= MAX_ENTRIES) {
      values.clear();
      seen = changes.value;
    }
    if (values.has(key)) return values.get(key) as V;
    const value = load(key);
    values.set(key, value);
    return value;
  };
}
