/**
 * The PostgreSQL form of the drizzle schema, derived from the SQLite tables every domain declares, so there is one
 * schema and drizzle-kit writes both engines' migrations from it (drizzle.pg.config.ts, data/migrations-pg). Only
 * drizzle-kit loads this file; a running gateway reads the SQLite table objects on either engine.
 *
 * Column types follow what the SQLite driver stores: integers and booleans (0/1) as bigint, text and JSON text as
 * text, blobs as bytea, reals as double precision. Every table also gets `rowid` (bigserial, unique), standing in
 * for SQLite's implicit rowid that some queries order by.
 */
import { createRequire } from 'node:module';

// CommonJS builds, as drizzle-kit loads them: its `is(table, PgTable)` must see the same classes.
const load = createRequire(import.meta.filename ?? __filename);
const sqliteCore = load('drizzle-orm/sqlite-core') as typeof import('drizzle-orm/sqlite-core');
const pgCore = load('drizzle-orm/pg-core') as typeof import('drizzle-orm/pg-core');

type SqliteTable = import('drizzle-orm/sqlite-core').SQLiteTable;
type SqliteColumn = import('drizzle-orm/sqlite-core').SQLiteColumn;
type PgTable = import('drizzle-orm/pg-core').PgTable;
type PgColumns = Record<string, import('drizzle-orm/pg-core').PgColumnBuilderBase>;

const bytea = pgCore.customType<{ data: Buffer }>({ dataType: () => 'bytea' });

/** Every SQLite table among `exports` as a PostgreSQL table, referenced tables first-come (memoised). */
export function mirrorSchema(exports: Record<string, unknown>): Record<string, PgTable> {
  const mirrored = new Map<SqliteTable, PgTable>();
  const mirror = (table: SqliteTable): PgTable => {
    let pg = mirrored.get(table);
    if (!pg) {
      pg = mirrorTable(table, mirror);
      mirrored.set(table, pg);
    }
    return pg;
  };
  const out: Record<string, PgTable> = {};
  for (const [name, value] of Object.entries(exports)) {
    if (value instanceof sqliteCore.SQLiteTable) out[name] = mirror(value);
  }
  return out;
}

function mirrorTable(table: SqliteTable, mirror: (table: SqliteTable) => PgTable): PgTable {
  const config = sqliteCore.getTableConfig(table);
  const columns: PgColumns = { rowid: pgCore.bigserial('rowid', { mode: 'number' }).notNull().unique() };
  for (const column of config.columns) columns[column.name] = mirrorColumn(column);
  return pgCore.pgTable(config.name, columns, (t) => {
    const at = (column: { name: string }) => t[column.name] as import('drizzle-orm/pg-core').PgColumn;
    return [
      ...config.indexes.map(({ config: index }) => {
        const built = (index.unique ? pgCore.uniqueIndex : pgCore.index)(index.name).on(
          ...((index.columns as SqliteColumn[]).map(at) as [never]),
        );
        // A partial index's condition, written for both engines by its table (raw SQL, no column objects).
        return index.where ? built.where(index.where) : built;
      }),
      ...config.primaryKeys.map((key) => pgCore.primaryKey({ columns: key.columns.map(at) as [never] })),
      ...config.foreignKeys.map((key) => {
        const reference = key.reference();
        const target = mirror(reference.foreignTable) as unknown as Record<
          string,
          import('drizzle-orm/pg-core').PgColumn
        >;
        const built = pgCore.foreignKey({
          columns: reference.columns.map(at) as [never],
          foreignColumns: reference.foreignColumns.map((c) => target[c.name]) as [never],
        });
        if (key.onDelete) built.onDelete(key.onDelete);
        if (key.onUpdate) built.onUpdate(key.onUpdate);
        return built;
      }),
    ];
  });
}

function mirrorColumn(column: SqliteColumn): import('drizzle-orm/pg-core').PgColumnBuilderBase {
  const autoIncrement = (column as unknown as { autoIncrement?: boolean }).autoIncrement === true;
  // biome-ignore lint/suspicious/noExplicitAny: the builders differ only in their type parameters here.
  let built: any;
  switch (column.columnType) {
    case 'SQLiteText':
    case 'SQLiteTextJson':
      built = pgCore.text(column.name);
      break;
    case 'SQLiteInteger':
    case 'SQLiteBoolean':
    case 'SQLiteTimestamp':
      built = autoIncrement
        ? pgCore.bigserial(column.name, { mode: 'number' })
        : pgCore.bigint(column.name, { mode: 'number' });
      break;
    case 'SQLiteBlobBuffer':
      built = bytea(column.name);
      break;
    case 'SQLiteReal':
      built = pgCore.doublePrecision(column.name);
      break;
    default:
      throw new Error(`${column.name}: no PostgreSQL type for ${column.columnType}`);
  }
  if (column.notNull) built = built.notNull();
  if (column.primary) built = built.primaryKey();
  if (column.isUnique) built = built.unique(column.uniqueName);
  if (column.default !== undefined) built = built.default(driverDefault(column));
  return built;
}

/** The default as the SQLite driver would store it: booleans as 0/1, JSON columns as their text. */
function driverDefault(column: SqliteColumn): unknown {
  const value = column.default;
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'queryChunks' in value) {
    throw new Error(`${column.name}: SQL defaults have no PostgreSQL mirror; give a value`);
  }
  if (column.columnType === 'SQLiteBoolean') return value ? 1 : 0;
  if (column.columnType === 'SQLiteTextJson') return JSON.stringify(value);
  return value;
}
