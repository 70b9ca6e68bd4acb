/**
 * The settings of a gateway that is one node of several (gateway/config/schema.ts): the shared PostgreSQL
 * database, the node key sealing the cluster identity in it, and how nodes reach and watch each other.
 */
import { z } from 'zod';

export const databaseSetting = z
  .string()
  .regex(/^postgres(ql)?:\/\//, 'a postgres:// or postgresql:// URL')
  .nullable()
  .default(null)
  .describe(
    'PostgreSQL shared by every node of a cluster (libpq URL; TLS and the password as libpq takes them); ' +
      'null = SQLite in the data dir.',
  );

export const nodeKeyFileSetting = z
  .string()
  .min(1)
  .nullable()
  .default(null)
  .describe(
    'On PostgreSQL: the file of the 32-byte key sealing the cluster identity in the database; the same on every ' +
      'node, never in the database.',
  );

export const nodeKeySetting = z
  .string()
  .regex(/^[A-Za-z0-9+/]{43}=$/, '32 bytes in base64')
  .nullable()
  .default(null)
  .describe('The node key itself, base64 (PLATFORM_NODE_KEY), instead of nodeKeyFile.');

export const nodesSettings = z
  .strictObject({
    url: z
      .url({ protocol: /^https$/ })
      .nullable()
      .default(null)
      .describe(
        'On PostgreSQL: how the other nodes reach this one (https://address:port); null = the origin. Its ' +
          'certificate is the cluster one, verified for the first hostname.',
      ),
    heartbeatMs: z.number().int().min(50).max(60_000).default(2000).describe('How often a node says it is alive.'),
    deadAfterMs: z
      .number()
      .int()
      .min(200)
      .max(3_600_000)
      .default(10_000)
      .describe('A node silent this long is dead: another node ends its local jobs as lost (docs/operating.md).'),
  })
  .prefault({});
