/**
 * drizzle-orm, loaded through its CommonJS build. Every store and schema
 * imports drizzle from here, never from 'drizzle-orm' directly.
 *
 * Why: importing drizzle's ESM graph (its `relations.js` pulls in all of
 * `pg-core`) leaves V8's young generation grown by ~140 MB of loader
 * garbage that stays committed for the life of the process; `require()` of
 * the same build costs ~15 MB (bench/README.md, proxy: idle and peak RSS).
 * Types still come from the ESM declarations (`typeof import(...)`), which
 * describe the same API.
 */
import { createRequire } from 'node:module';

// drizzle-kit loads the schema files as CommonJS, where import.meta is empty.
const load = createRequire(import.meta.filename ?? __filename);

const orm = load('drizzle-orm') as typeof import('drizzle-orm');
const sqliteCore = load('drizzle-orm/sqlite-core') as typeof import('drizzle-orm/sqlite-core');
const betterSqlite = load('drizzle-orm/better-sqlite3') as typeof import('drizzle-orm/better-sqlite3');
const migrator = load('drizzle-orm/better-sqlite3/migrator') as typeof import('drizzle-orm/better-sqlite3/migrator');

export const {
  and,
  asc,
  count,
  desc,
  eq,
  gt,
  gte,
  inArray,
  isNotNull,
  isNull,
  lt,
  lte,
  ne,
  notExists,
  notInArray,
  or,
  sql,
} = orm;
export type { SQL } from 'drizzle-orm';
export const { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } = sqliteCore;
export const { drizzle } = betterSqlite;
export type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
export const { migrate } = migrator;
