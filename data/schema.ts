/** The drizzle schema index: every domain's tables, for drizzle-kit. */
export * from '../domains/auth/schema.ts';
export * from '../domains/authz/schema.ts';
export * from '../domains/catalog/schema.ts';
export * from '../domains/federation/schema.ts';
export * from '../domains/jobs/schema.ts';
export * from '../domains/retrieval/schema.ts';
export * from '../domains/routing/schema.ts';
export * from '../domains/serving/schema.ts';
export * from '../gateway/db/schema.ts';
