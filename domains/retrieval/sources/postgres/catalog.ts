/**
 * A Postgres relation's columns, read from pg_catalog inside the read's own
 * transaction after the relation is locked (docs/retrieval.md, Postgres).
 *
 * Why pg_catalog and not information_schema.columns: the latter leaves out
 * materialized views and the columns the role holds no privilege on. Why
 * locked first: a read converts COPY text by each column's type
 * (copy.ts); the ACCESS SHARE lock taken by a SELECT on the relation is
 * held until the transaction ends, so no `ALTER COLUMN … TYPE` can commit
 * between this lookup and the COPY that follows it.
 */
import pg from 'pg';
import { RetrievalErrors } from '../../errors.ts';
import type { PgTarget } from './connection.ts';

const { escapeIdentifier } = pg;

export interface PgColumn {
  readonly name: string;
  /** information_schema's `data_type` text (a domain's base type). */
  readonly type: string;
  readonly domain: boolean;
}

/**
 * information_schema.columns' `data_type` and `domain_name IS NOT NULL`,
 * rebuilt from its definition (PostgreSQL's information_schema.sql): for a
 * domain its base type; `ARRAY` for a varlena type with an element type;
 * `format_type` for a type in pg_catalog; else `USER-DEFINED`. Relations:
 * tables, views, materialized views, foreign and partitioned tables.
 */
const COLUMNS_SQL = `
  SELECT a.attname AS name,
         CASE WHEN b.typelem <> 0 AND b.typlen = -1 THEN 'ARRAY'
              WHEN bn.nspname = 'pg_catalog' THEN format_type(b.oid, NULL)
              ELSE 'USER-DEFINED' END AS type,
         t.typtype = 'd' AS domain
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
    JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
    JOIN pg_catalog.pg_namespace bn ON bn.oid = b.typnamespace
   WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'v', 'm', 'f', 'p')
     AND a.attnum > 0 AND NOT a.attisdropped
   ORDER BY a.attnum`;

export const relationName = (target: PgTarget): string =>
  `${escapeIdentifier(target.schema)}.${escapeIdentifier(target.table)}`;

/**
 * The relation's columns, in order. Call it inside a transaction: it first
 * locks the relation for the rest of it with a SELECT of no columns (which
 * needs SELECT on the table or on any of its columns, so a role without it
 * fails here with 42501, and a missing relation with 42P01).
 */
export async function lockedColumns(client: pg.Client, target: PgTarget): Promise<PgColumn[]> {
  await client.query(`SELECT FROM ${relationName(target)} LIMIT 0`);
  const result = await client.query<PgColumn>(COLUMNS_SQL, [target.schema, target.table]);
  // A sequence or a relation of no columns: nothing a row could be read from.
  if (result.rows.length === 0) throw RetrievalErrors.make.source_not_found({ problem: 'table not found' });
  return result.rows;
}
