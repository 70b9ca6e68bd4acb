/**
 * Tuple storage behind the narrow reader/writer interfaces the checker and
 * the API need (OpenFGA's RelationshipTupleReader). The database is the source of
 * truth; checks and object listings read the in-memory TupleIndex, which is
 * loaded from the database here and updated only after a write has committed.
 */
import type { SqlConnection } from '../../gateway/db/connection.ts';
import { TupleIndex } from './memory-index.ts';

export interface Tuple {
  subjectNs: string;
  subjectId: string;
  relation: string;
  objectNs: string;
  objectId: string;
  tenant: string;
}

/** A stored tuple as listed: with its row id (the resource grants API's grant_id) and creation time. */
export interface TupleRow extends Tuple {
  rowid: number;
  createdAt: string;
}

export interface TupleFilter extends Partial<Tuple> {
  limit?: number;
  offset?: number;
}

export interface TupleReader {
  /** Relation bits (model.RELATION_BIT) the subject holds on the object; 0 when none. */
  mask(subjectNs: string, subjectId: string, objectNs: string, objectId: string, tenant: string): number;
  /** Object ids of `objectNs` on which the subject holds any bit of `required`. */
  objectIds(subjectNs: string, subjectId: string, objectNs: string, required: number, tenant: string): string[];
  list(filter: TupleFilter): TupleRow[];
  /** Increases on every change; the resource grants API returns it as `zedtoken`. */
  readonly revision: number;
}

export interface TupleWriter {
  /** Idempotent: writing an existing tuple changes nothing. All or nothing. Returns how many were new. */
  write(tuples: readonly Tuple[], at: string): number;
  /** Deletes matching tuples; a null relation matches every relation. Returns the count. */
  delete(match: Omit<Tuple, 'relation'> & { relation: string | null }): number;
  deleteObject(objectNs: string, objectId: string, tenant: string): number;
  deleteSubject(subjectNs: string, subjectId: string): number;
}

/** Changes committed by other processes or the CLI, as the change feed delivers them. */
export interface TupleFollower {
  /** Re-reads one tuple (its feed key: the JSON array of its six columns) and adds or drops it. */
  refresh(key: string): void;
  /** Rebuilds the index from the table. */
  reload(): void;
}

export type TupleStore = TupleReader & TupleWriter & TupleFollower;

// Quoted aliases: PostgreSQL folds unquoted names to lower case, SQLite keeps them as written.
const COLUMNS =
  'subject_ns AS "subjectNs", subject_id AS "subjectId", relation, ' +
  'object_ns AS "objectNs", object_id AS "objectId", tenant';

/** No limit, written so both engines take it (SQLite's LIMIT -1 is an error on PostgreSQL). */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

const FILTER_COLUMN: Record<keyof Tuple, string> = {
  subjectNs: 'subject_ns',
  subjectId: 'subject_id',
  relation: 'relation',
  objectNs: 'object_ns',
  objectId: 'object_id',
  tenant: 'tenant',
};

export function createTupleStore(database: SqlConnection): TupleStore {
  const loadIndex = () => {
    const fresh = new TupleIndex();
    fresh.load(database.prepare(`SELECT ${COLUMNS} FROM authz_tuples`).iterate() as Iterable<Tuple>);
    return fresh;
  };
  let index = loadIndex();
  let revision = 0;
  const insert = database.prepare(
    'INSERT INTO authz_tuples (subject_ns, subject_id, relation, ' +
      'object_ns, object_id, tenant, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const writeMany = database.transaction((rows: readonly Tuple[], at: string) => {
    let added = 0;
    for (const r of rows)
      added += insert.run(r.subjectNs, r.subjectId, r.relation, r.objectNs, r.objectId, r.tenant, at).changes;
    return added;
  });
  const exists = database.prepare(
    'SELECT 1 FROM authz_tuples WHERE subject_ns = ? AND subject_id = ? ' +
      'AND relation = ? AND object_ns = ? AND object_id = ? AND tenant = ?',
  );
  // A caller may write inside its own transaction (a dataset row and its
  // owner tuple together), which can still roll back after we return. Such
  // changes enter the index at once (reads on this connection see them too)
  // and are re-read from the database in a microtask: transactions on either
  // engine are synchronous (gateway/db/connection.ts), so by then the outer one has committed or rolled back.
  let pending: Tuple[] = [];
  const reread = (t: Tuple) => {
    if (exists.get(t.subjectNs, t.subjectId, t.relation, t.objectNs, t.objectId, t.tenant)) index.add(t);
    else index.remove(t);
  };
  const reconcile = () => {
    const rows = pending;
    pending = [];
    for (const t of rows) reread(t);
  };
  const touched = (rows: readonly Tuple[]) => {
    if (!database.inTransaction || rows.length === 0) return;
    if (pending.length === 0) queueMicrotask(reconcile);
    pending.push(...rows);
  };
  // RETURNING gives the rows actually removed, so the index drops exactly those.
  const removeRows = (sql: string, ...args: string[]) => {
    const removed = database.prepare(`${sql} RETURNING ${COLUMNS}`).all(...args) as Tuple[];
    for (const row of removed) index.remove(row);
    touched(removed);
    if (removed.length > 0) revision++;
    return removed.length;
  };
  return {
    mask: (sNs, sId, oNs, oId, tenant) => index.mask(tenant, sNs, sId, oNs, oId),
    objectIds: (sNs, sId, oNs, required, tenant) => index.objectIds(tenant, sNs, sId, oNs, required),
    get revision() {
      return revision;
    },
    list(filter) {
      const keys = (Object.keys(FILTER_COLUMN) as (keyof Tuple)[]).filter((k) => filter[k] !== undefined);
      const where = keys.length ? `WHERE ${keys.map((k) => `${FILTER_COLUMN[k]} = ?`).join(' AND ')}` : '';
      return database
        .prepare(
          `SELECT rowid, ${COLUMNS}, created_at AS "createdAt" FROM ` +
            `authz_tuples ${where} ORDER BY rowid LIMIT ? OFFSET ?`,
        )
        .all(...keys.map((k) => filter[k]), filter.limit ?? UNLIMITED, filter.offset ?? 0) as TupleRow[];
    },
    write(rows, at) {
      const added = writeMany(rows, at);
      for (const row of rows) index.add(row);
      touched(rows);
      if (added > 0) revision++;
      return added;
    },
    delete(m) {
      const base =
        'DELETE FROM authz_tuples WHERE subject_ns = ? AND subject_id = ? AND ' +
        'object_ns = ? AND object_id = ? AND tenant = ?';
      const args = [m.subjectNs, m.subjectId, m.objectNs, m.objectId, m.tenant];
      return m.relation === null
        ? removeRows(base, ...args)
        : removeRows(`${base} AND relation = ?`, ...args, m.relation);
    },
    deleteObject: (oNs, oId, tenant) =>
      removeRows('DELETE FROM authz_tuples WHERE object_ns = ? AND object_id = ? AND tenant = ?', oNs, oId, tenant),
    deleteSubject: (sNs, sId) =>
      removeRows('DELETE FROM authz_tuples WHERE subject_ns = ? AND subject_id = ?', sNs, sId),
    refresh(key) {
      const [subjectNs, subjectId, relation, objectNs, objectId, tenant] = JSON.parse(key) as string[];
      reread({ subjectNs, subjectId, relation, objectNs, objectId, tenant } as Tuple);
      revision++;
    },
    reload() {
      index = loadIndex();
      revision++;
    },
  };
}
