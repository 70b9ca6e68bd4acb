/**
 * The public listener's certificate from an ACME CA (RFC 8555), as Caddy and Traefik obtain theirs: the settings
 * under `tls.acme` (gateway/config/schema.ts). The names ordered are the deployment domain (the first hostname)
 * and `names`; the platform CA keeps signing everything else (the mesh pins it).
 */
import { z } from 'zod';

/** A DNS name a public CA can validate by HTTP-01 or TLS-ALPN-01: no IP address, no wildcard, a dot inside. */
export const ACME_NAME = /^(?=.{1,253}$)(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/;

const challengeTypes = z.enum(['tls-alpn-01', 'http-01']);

export const acmeSettings = z
  .strictObject({
    directoryUrl: z
      .url({ protocol: /^https$/ })
      .nullable()
      .default(null)
      .describe(
        "The ACME CA's directory URL; null = no ACME (the platform CA's certificate, or tlsCertFile). Try the " +
          "CA's staging directory first: production directories rate-limit failed orders.",
      ),
    contact: z
      .array(z.email().transform((address) => `mailto:${address}`))
      .default([])
      .describe('E-mail addresses the CA may write to about the account (expiry, incidents).'),
    names: z
      .array(z.string().toLowerCase().regex(ACME_NAME, 'a DNS name (no IP address, no wildcard)'))
      .default([])
      .describe('Names ordered besides the deployment domain (the first hostname).'),
    challenges: z
      .array(challengeTypes)
      .min(1)
      .default(['tls-alpn-01', 'http-01'])
      .describe('Challenge types answered, in order of preference (TLS-ALPN-01 on the HTTPS port; HTTP-01 below).'),
    httpPort: z
      .number()
      .int()
      .min(0)
      .max(65535)
      .nullable()
      .default(80)
      .describe(
        'The HTTP-01 listener (port 80 as the CA reaches it): answers the tokens of pending orders only and ' +
          'redirects everything else to https; null = none.',
      ),
    directoryCaFile: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe("PEM roots the directory's HTTPS certificate is verified with instead of the system's; null = system."),
    externalAccountBinding: z
      .strictObject({
        keyId: z.string().min(1).describe('The key identifier the CA gave (RFC 8555 §7.3.4).'),
        hmacKeyFile: z.string().min(1).describe('The file holding its MAC key (base64url), never the key itself.'),
      })
      .nullable()
      .default(null)
      .describe('External account binding, for CAs that require one; null = none.'),
    profile: z
      .string()
      .min(1)
      .nullable()
      .default(null)
      .describe("A certificate profile the CA's directory lists (`meta.profiles`); null = the CA's default."),
    retryMinSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(60)
      .describe('First wait after a failed order or renewal; doubled per failure up to six hours, with jitter.'),
  })
  .prefault({})
  .refine((acme) => !acme.challenges.includes('http-01') || acme.httpPort !== null, {
    message: 'http-01 needs httpPort',
    path: ['httpPort'],
  });

export const tlsSettings = z.strictObject({ acme: acmeSettings }).prefault({});
