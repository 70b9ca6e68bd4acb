import { defineConfig } from 'drizzle-kit';

// The PostgreSQL engine's migrations, from the same schema (data/schema.pg.ts mirrors data/schema.ts).
export default defineConfig({
  dialect: 'postgresql',
  schema: './data/schema.pg.ts',
  out: './data/migrations-pg',
});
