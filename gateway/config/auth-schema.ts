/**
 * The `auth` section of the configuration (gateway/config/schema.ts): token
 * lifetimes and signing algorithm, the login throttle, forward authentication.
 */
import { z } from 'zod';

export const authSettings = z
  .strictObject({
    accessTokenTtlSeconds: z.number().int().min(30).max(86400).default(900).describe('Lifetime of access tokens from /api/auth/token.'),
    signingAlgorithm: z
      .enum(['RS256', 'ES256'])
      .default('RS256')
      .describe(
        'JWS algorithm of the tokens this cluster signs (RS256 as Keycloak; ES256 smaller and faster). A change rotates the key at start; tokens the old key signed stay valid until they expire.',
      ),
    refreshTokenTtlSeconds: z
      .number()
      .int()
      .min(60)
      .default(7 * 86400)
      .describe('Lifetime of refresh tokens.'),
    patDefaultTtlSeconds: z
      .number()
      .int()
      .min(60)
      .default(90 * 86400)
      .describe('PAT lifetime when none is asked for.'),
    patMaxTtlSeconds: z
      .number()
      .int()
      .min(60)
      .default(365 * 86400)
      .describe('Longest PAT lifetime allowed.'),
    throttle: z
      .strictObject({
        clientBurst: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(10)
          .describe('Failed logins a client address (IPv6: its /64) may make before it is refused 429.'),
        clientRefillSeconds: z.number().positive().max(3600).default(6).describe('Seconds for a client address to earn back one failed login.'),
        accountBurst: z
          .number()
          .int()
          .min(1)
          .max(100)
          .default(20)
          .describe('Failed logins on one username before only clients without recent failures may still try it (NIST SP 800-63B §5.2.2: at most 100).'),
        accountRefillSeconds: z.number().positive().max(3600).default(30).describe('Seconds for a username to earn back one failed login.'),
        hashConcurrency: z.number().int().min(1).max(16).default(2).describe('Password hashes computed at once (scrypt runs on the libuv pool).'),
        hashQueuePerClient: z
          .number()
          .int()
          .min(1)
          .max(1000)
          .default(16)
          .describe('Logins one client address may have waiting or hashing; more are refused 429.'),
        hashQueueTotal: z.number().int().min(1).max(100_000).default(256).describe('Logins waiting or hashing in all; more are refused 503 login_busy.'),
        trackedKeys: z
          .number()
          .int()
          .min(100)
          .max(10_000_000)
          .default(100_000)
          .describe('Client addresses and usernames remembered by the throttle (the longest without a failure dropped first).'),
      })
      .prefault({}),
    forwardAuth: z
      .strictObject({
        trustedProxies: z
          .array(z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]))
          .default([])
          .describe(
            'Addresses or CIDRs of the reverse proxies calling /api/auth/validate: from them the client is read from X-Forwarded-For, for the failure throttle only (never an identity). Empty: the socket peer is the client.',
          ),
        failureBurst: z
          .number()
          .int()
          .min(1)
          .max(10_000)
          .default(20)
          .describe('Invalid credentials a client may present to /api/auth/validate before it is refused 429.'),
        failureRefillSeconds: z
          .number()
          .positive()
          .max(3600)
          .default(3)
          .describe('Seconds for a client to earn back one invalid credential at /api/auth/validate.'),
        trackedClients: z.number().int().min(100).max(10_000_000).default(100_000).describe('Clients remembered by the /api/auth/validate throttle.'),
      })
      .prefault({}),
  })
  .prefault({});
