/**
 * The `auth` section of the configuration (gateway/config/schema.ts): token
 * lifetimes and signing algorithm, the login throttle, forward authentication.
 */
import { z } from 'zod';
import { loginThrottleSchema } from './login-throttle.ts';

export const authSettings = z
  .strictObject({
    accessTokenTtlSeconds: z
      .number()
      .int()
      .min(30)
      .max(86400)
      .default(900)
      .describe('Lifetime of access tokens from /api/auth/token.'),
    signingAlgorithm: z
      .enum(['RS256', 'ES256'])
      .default('RS256')
      .describe(
        'JWS algorithm of the tokens this cluster signs (RS256 as Keycloak; ' +
          'ES256 smaller and faster). A change rotates the key at start; tokens ' +
          'the old key signed stay valid until they expire.',
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
    throttle: loginThrottleSchema,
    forwardAuth: z
      .strictObject({
        trustedProxies: z
          .array(z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]))
          .default([])
          .describe(
            'Addresses or CIDRs of the reverse proxies in front of the gateway (those calling ' +
              '/api/auth/validate among them): from them the client is read from X-Forwarded-For, for ' +
              "the validate failure throttle and the access log's client, never an identity. Empty: the " +
              'socket peer is the client.',
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
        trackedClients: z
          .number()
          .int()
          .min(100)
          .max(10_000_000)
          .default(100_000)
          .describe('Clients remembered by the /api/auth/validate throttle.'),
      })
      .prefault({}),
  })
  .prefault({});
