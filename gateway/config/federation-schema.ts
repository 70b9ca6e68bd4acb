/** The federation settings (gateway/config/schema.ts): trust policy, peer calls, reconciliation, the declared set. */
import { z } from 'zod';

export const federationSettings = z
  .strictObject({
    allowUntrustedFederation: z
      .boolean()
      .default(false)
      .describe(
        'PLATFORM_ALLOW_UNTRUSTED_FEDERATION: allow new `peer_kc` ' +
          '(source-trusted) federations; off refuses them with ' +
          'untrusted_federation_disabled.',
      ),
    trustedSharedIssuers: z
      .array(z.string().min(1))
      .default([])
      .describe(
        'PLATFORM_TRUSTED_SHARED_ISSUERS: issuer URLs of shared realms whose ' +
          'tokens mesh ingress accepts (shared_idp); empty trusts none.',
      ),
    peerTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(120_000)
      .default(15_000)
      .describe('Connect and answer timeout of peer-protocol calls and diagnose probes.'),
    reconcileIntervalSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .default(300)
      .describe(
        'Each PAIRED record is pinged once per interval, at a random offset within it; a peer that proves it no ' +
          'longer holds the pairing ends it here too. 0 = never.',
      ),
    deletedRetentionDays: z
      .number()
      .int()
      .min(0)
      .max(3650)
      .default(30)
      .describe('DELETED records (and their allowlists) are purged this many days after their deletion.'),
    declaredFile: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe('A declared federation set (docs/federation.md) applied at start; null = none.'),
  })
  .prefault({});
