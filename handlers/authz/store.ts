/**
 * Tuple storage behind the narrow reader/writer interfaces the checker and
 * the API need (OpenFGA's RelationshipTupleReader). Prepared statements:
 * a check is one indexed probe.
 */
import type Database from 'better-sqlite3';

export interface Tuple {
  subjectNs: string;
  subjectId: string;
  relation: string;
  objectNs: string;
  objectId: string;
  tenant: string;
}

export interface TupleReader {
  /** True when the subject holds any of `relations` on the object. */
  hasAny(subjectNs: string, subjectId: string, objectNs: string, objectId: string, relations: readonly string[], tenant: string): boolean;
  /** Object ids of `objectNs` on which the subject holds any of `relations`. */
  objectIds(subjectNs: string, subjectId: string, objectNs: string, relations: readonly string[], tenant: string): string[];
  list(filter: Partial<Tuple>): Tuple[];
}

export interface TupleWriter {
  /** Idempotent: writing an existing tuple changes nothing. All or nothing. */
  write(tuples: readonly Tuple[], at: string): void;
  /** Deletes matching tuples; a null relation matches every relation. Returns the count. */
  delete(match: Omit<Tuple, 'relation'> & { relation: string | null }): number;
  deleteObject(objectNs: string, objectId: string, tenant: string): number;
  deleteSubject(subjectNs: string, subjectId: string): number;
}

export type TupleStore = TupleReader & TupleWriter;

const COLUMNS = 'subject_ns AS subjectNs, subject_id AS subjectId, relation, object_ns AS objectNs, object_id AS objectId, tenant';

export function createTupleStore(sqlite: Database.Database): TupleStore {
  const insert = sqlite.prepare(
    'INSERT OR IGNORE INTO authz_tuples (subject_ns, subject_id, relation, object_ns, object_id, tenant, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const writeMany = sqlite.transaction((rows: readonly Tuple[], at: string) => {
    for (const r of rows) insert.run(r.subjectNs, r.subjectId, r.relation, r.objectNs, r.objectId, r.tenant, at);
  });
  const probes = new Map<number, Database.Statement>();
  const probe = (n: number) => {
    let stmt = probes.get(n);
    if (!stmt) {
      stmt = sqlite.prepare(
        `SELECT 1 FROM authz_tuples WHERE subject_ns = ? AND subject_id = ? AND object_ns = ? AND object_id = ? AND tenant = ? AND relation IN (${Array(n).fill('?').join(',')}) LIMIT 1`,
      );
      probes.set(n, stmt);
    }
    return stmt;
  };
  return {
    hasAny: (sNs, sId, oNs, oId, relations, tenant) => probe(relations.length).get(sNs, sId, oNs, oId, tenant, ...relations) !== undefined,
    objectIds(sNs, sId, oNs, relations, tenant) {
      const sql = `SELECT DISTINCT object_id AS id FROM authz_tuples WHERE subject_ns = ? AND subject_id = ? AND object_ns = ? AND tenant = ? AND relation IN (${relations.map(() => '?').join(',')})`;
      return (sqlite.prepare(sql).all(sNs, sId, oNs, tenant, ...relations) as { id: string }[]).map((r) => r.id);
    },
    list(filter) {
      const column: Record<keyof Tuple, string> = {
        subjectNs: 'subject_ns',
        subjectId: 'subject_id',
        relation: 'relation',
        objectNs: 'object_ns',
        objectId: 'object_id',
        tenant: 'tenant',
      };
      const keys = (Object.keys(filter) as (keyof Tuple)[]).filter((k) => filter[k] !== undefined);
      const where = keys.length ? `WHERE ${keys.map((k) => `${column[k]} = ?`).join(' AND ')}` : '';
      return sqlite.prepare(`SELECT ${COLUMNS} FROM authz_tuples ${where} ORDER BY created_at, rowid`).all(...keys.map((k) => filter[k])) as Tuple[];
    },
    write: (rows, at) => writeMany(rows, at),
    delete(m) {
      const byRelation = m.relation === null ? '' : ' AND relation = ?';
      const args = [m.subjectNs, m.subjectId, m.objectNs, m.objectId, m.tenant, ...(m.relation === null ? [] : [m.relation])];
      return sqlite
        .prepare(`DELETE FROM authz_tuples WHERE subject_ns = ? AND subject_id = ? AND object_ns = ? AND object_id = ? AND tenant = ?${byRelation}`)
        .run(...args).changes;
    },
    deleteObject: (oNs, oId, tenant) =>
      sqlite.prepare('DELETE FROM authz_tuples WHERE object_ns = ? AND object_id = ? AND tenant = ?').run(oNs, oId, tenant).changes,
    deleteSubject: (sNs, sId) => sqlite.prepare('DELETE FROM authz_tuples WHERE subject_ns = ? AND subject_id = ?').run(sNs, sId).changes,
  };
}
