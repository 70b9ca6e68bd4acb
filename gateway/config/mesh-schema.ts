/**
 * The `mesh` section of the configuration (gateway/config/schema.ts): signature windows, the replay cache,
 * hardening features offered at pairing, the egress deadlines and peer connections.
 */
import { z } from 'zod';

export const meshSettings = z
  .strictObject({
    proxyReadTimeoutSeconds: z
      .number()
      .positive()
      .max(3600)
      .default(60)
      .describe(
        'PLATFORM_MESH_PROXY_READ_TIMEOUT_SECONDS: egress wait for the peer on /api paths ' +
          '(headers, then between body chunks); 504 beyond.',
      ),
    runtimeReadTimeoutSeconds: z
      .number()
      .positive()
      .max(86400)
      .default(600)
      .describe('PLATFORM_MESH_PROXY_RUNTIME_READ_TIMEOUT_SECONDS: the same for /runtime paths (model streaming).'),
    signatureTtlSeconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .default(300)
      .describe('auth_forward_header_signature_ttl_seconds: oldest accepted mesh signature.'),
    signatureFutureSkewSeconds: z
      .number()
      .int()
      .min(0)
      .max(600)
      .default(60)
      .describe('auth_forward_header_signature_allowed_future_skew_seconds: furthest-ahead accepted signature.'),
    features: z
      .array(z.enum(['nonce', 'body-sha256', 'federation-id']))
      .default(['nonce', 'body-sha256', 'federation-id'])
      .describe(
        'PLATFORM_MESH_FEATURES: hardening this cluster offers at pairing (signed nonce + replay cache, ' +
          'signed body digest, signed federation id); [] keeps the spec envelope only.',
      ),
    replayCacheSize: z
      .number()
      .int()
      .min(100)
      .max(10_000_000)
      .default(100_000)
      .describe('Nonces remembered per peer for replay refusal (oldest dropped beyond).'),
  })
  .prefault({});
