/**
 * Catalog tables: datasets, containers, secrets, and the KEK
 * ledger. Secrets hold only ciphertext and a wrapped data key; key material
 * of the KEKs lives in key files (crypto.ts, kek-ring.ts), never here.
 */
import { blob, index, integer, primaryKey, sqliteTable, text } from '../../gateway/db/drizzle.ts';

export const catalogContainers = sqliteTable(
  'catalog_containers',
  {
    urn: text('urn').primaryKey(),
    name: text('name').notNull(),
    platform: text('platform'),
    description: text('description'),
    tags: text('tags', { mode: 'json' }).$type<string[]>().notNull(),
    properties: text('properties', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    parentUrn: text('parent_urn'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('catalog_containers_parent').on(t.parentUrn)],
);

export const catalogDatasets = sqliteTable(
  'catalog_datasets',
  {
    urn: text('urn').primaryKey(),
    name: text('name').notNull(),
    platform: text('platform').notNull(),
    environment: text('environment').notNull(),
    description: text('description'),
    tags: text('tags', { mode: 'json' }).$type<string[]>().notNull(),
    properties: text('properties', { mode: 'json' }).$type<Record<string, unknown>>().notNull(),
    datasetSchema: text('dataset_schema', { mode: 'json' }).$type<Record<string, unknown> | null>(),
    containerUrn: text('container_urn'),
    writable: integer('writable', { mode: 'boolean' }).notNull().default(false),
    storage: text('storage', { mode: 'json' }).$type<unknown>(),
    contentRevision: integer('content_revision').notNull().default(0),
    createdBy: text('created_by').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('catalog_datasets_container').on(t.containerUrn, t.urn)],
);

export const catalogSecrets = sqliteTable(
  'catalog_secrets',
  {
    urn: text('urn').primaryKey(),
    /**
     * Random UUID given at creation and never reused: what datasets bind to.
     * The URN is only a name, which a later secret may take again after a
     * delete; a value update (clobber) or a KEK rotation keeps the id.
     */
    id: text('id').notNull().unique(),
    name: text('name').notNull(),
    description: text('description'),
    /** `urn:li:corpuser:<username>` as shown; ownerId is what authorizes. */
    owner: text('owner').notNull(),
    ownerId: text('owner_id').notNull(),
    /** AES-256-GCM of the value under the secret's own data key: iv ‖ ciphertext ‖ tag. */
    ciphertext: blob('ciphertext', { mode: 'buffer' }).notNull(),
    /** The data key wrapped by KEK `kekVersion`: iv ‖ ciphertext ‖ tag. */
    wrappedKey: blob('wrapped_key', { mode: 'buffer' }).notNull(),
    kekVersion: integer('kek_version').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('catalog_secrets_kek').on(t.kekVersion), index('catalog_secrets_owner').on(t.ownerId)],
);

/**
 * Which secret each reference in a dataset's properties was bound to when
 * the dataset was written: the reference as written (a secret URN) and the
 * id of the secret that URN named then. Uses resolve by `secretId` only, so
 * a secret deleted and created again under the same name is a different
 * secret, never picked up silently.
 */
export const catalogDatasetSecrets = sqliteTable(
  'catalog_dataset_secrets',
  {
    datasetUrn: text('dataset_urn')
      .notNull()
      .references(() => catalogDatasets.urn, { onDelete: 'cascade' }),
    reference: text('reference').notNull(),
    secretId: text('secret_id').notNull(),
    /** The local user who wrote the reference: a use is authorized against them, not whoever owns the dataset now. */
    boundBy: text('bound_by').notNull(),
  },
  (t) => [primaryKey({ columns: [t.datasetUrn, t.reference] }), index('catalog_dataset_secrets_secret').on(t.secretId)],
);

/**
 * One row per KEK version: `active` wraps new data keys; `retiring` still
 * wraps some until a rotation finishes; `retired` wraps none and its key
 * file is deleted. `check` is a key-check value (HMAC of a constant), so a
 * wrong key file is refused at start; it reveals nothing about the key.
 */
export const catalogKeks = sqliteTable('catalog_keks', {
  version: integer('version').primaryKey(),
  state: text('state', { enum: ['active', 'retiring', 'retired'] }).notNull(),
  check: text('key_check').notNull(),
  createdAt: text('created_at').notNull(),
  retiredAt: text('retired_at'),
});
