/** The drizzle schema index: every domain's tables, for drizzle-kit (STYLE C7). */
export * from '../handlers/auth/schema.ts';
export * from '../handlers/authz/schema.ts';
export * from '../handlers/catalog/schema.ts';
export * from '../handlers/federation/schema.ts';
export * from '../handlers/jobs/schema.ts';
export * from '../handlers/retrieval/schema.ts';
export * from '../handlers/routing/schema.ts';
export * from '../handlers/serving/schema.ts';
