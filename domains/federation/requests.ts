/** Request bodies and queries of the federation API and the peer protocol, as zod schemas. */
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { parsePeerAddress } from '../../gateway/mesh/peer-agent.ts';
import { recipeSchema } from './recipe.ts';

const address = z
  .string()
  .trim()
  .min(1)
  .max(300)
  .refine(
    (ip) => {
      try {
        parsePeerAddress(ip);
        return true;
      } catch {
        return false;
      }
    },
    { message: 'not an address: IPv4, [IPv6] or a DNS name, optionally with :port' },
  );

export const remoteIpSchema = z.object({
  ip: address,
  hostname: z
    .string()
    .trim()
    .max(253)
    .regex(/^[A-Za-z0-9.:-]*$/, 'not a hostname')
    .nullish()
    .transform((v) => v || null),
  primary: z.boolean().default(false),
});

/** A PEM that parses as an X.509 certificate. */
export const certificatePem = z
  .string()
  .max(65536)
  .refine(
    (pem) => {
      try {
        new X509Certificate(pem);
        return true;
      } catch {
        return false;
      }
    },
    { message: 'not a PEM certificate' },
  );

export const createBody = z.object({
  remote_cluster_name: z.string().trim().min(1).max(128),
  remote_ips: z.array(remoteIpSchema).max(16).optional(),
  preshared_key: z.string().min(16, 'use at least 16 characters (the SDK mints a uuid4)').max(1024),
  callback_hostname: address.nullish(),
  role: z.enum(['initiator', 'receiver']).default('initiator'),
  shared_issuer_url: z.url({ protocol: /^https?$/ }).nullish(),
  shared_jwks_url: z.string().nullish(),
  shared_ca_pem: certificatePem.nullish(),
  identity_mode: z.string().nullish(),
  brokering_enabled: z.boolean().optional(),
  require_peer_jwt: z.boolean().nullish(),
  local_kc_issuer_url: z.url().nullish(),
  local_kc_jwks_url: z.url().nullish(),
  local_broker_client_id: z.string().min(1).max(256).nullish(),
  local_broker_client_secret: z.string().min(1).max(1024).nullish(),
});
export type CreateBody = z.infer<typeof createBody>;

/** PUT: the fields that may change. */
export const updatableFields = z.object({
  brokering_enabled: z.boolean().optional(),
  shared_ca_pem: certificatePem.nullable().optional(),
  require_peer_jwt: z.boolean().nullable().optional(),
  shared_jwks_url: z.string().nullable().optional(),
});

export const listQuery = z.object({
  status: z.enum(['WAITING', 'PAIRING', 'PAIRED', 'DISCONNECTED', 'DELETED']).optional(),
  /** Records whose name or id contains this text (case-insensitive). */
  q: z.string().trim().min(1).max(128).optional(),
  skip: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const boolFlag = z
  .enum(['true', 'false', '1', '0'])
  .optional()
  .transform((v) => v === 'true' || v === '1');
export const forceQuery = z.object({ force: boolFlag });
export const cancelJobsQuery = z.object({ cancel_in_flight_jobs: boolFlag });

export const allowlistBody = z.object({
  external_id: z
    .string()
    .trim()
    .max(512)
    .regex(/^[^@\s]+@[^@\s]+$/, 'must be <source_user_uuid>@<source_cluster_uuid>'),
  initial_tuples: recipeSchema.nullish().transform((v) => v ?? []),
});

export const restoreBody = z.object({ initial_tuples: recipeSchema.optional() }).nullish();

export const preflightBody = z.object({ remote_ips: z.array(remoteIpSchema).min(1).max(16) });
export const resolveBody = z.object({ address });

/** The peer protocol. Every body carries the caller's nonce (peer-client.ts). */
/** Mesh hardening offered at pairing; a peer that sends none speaks the base envelope only. */
const meshFeaturesOffer = z.array(z.string().max(32)).max(16).default([]);

export const pairRequest = z.object({
  local_cluster_id: z.uuid(),
  local_cluster_name: z.string().trim().min(1).max(128),
  /** The initiator's record id; a peer that sends none is never named by it (no federation-id feature). */
  local_federation_id: z.string().min(1).max(64).nullish(),
  local_ips: z.array(remoteIpSchema).max(16).default([]),
  admin_user_id: z.string().max(256).nullish(),
  local_ca_cert: certificatePem,
  peer_kc_issuer_url: z.string().max(2048).nullish(),
  peer_kc_jwks_url: z.string().max(2048).nullish(),
  peer_broker_client_id: z.string().max(256).nullish(),
  peer_broker_client_secret: z.string().max(1024).nullish(),
  mesh_features: meshFeaturesOffer,
  nonce: z.string().min(1).max(64),
});

export const pairAnswer = z.object({
  cluster_id: z.uuid(),
  cluster_name: z.string().min(1).max(128),
  ca_cert: certificatePem,
  federation_id: z.string().min(1).max(64).optional(),
  status: z.literal('PAIRED'),
  mesh_features: meshFeaturesOffer,
});

export const disconnectRequest = z.object({
  federation_id: z.string().max(64),
  cluster_id: z.uuid(),
  reason: z.string().max(64).nullish(),
  nonce: z.string().min(1).max(64),
});
