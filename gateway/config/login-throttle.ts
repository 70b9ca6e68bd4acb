/**
 * `auth.throttle`: the login throttle's buckets and queue bounds
 * (domains/auth/throttle.ts), part of the auth section (auth-schema.ts).
 */
import { z } from 'zod';

export const loginThrottleSchema = z
  .strictObject({
    clientBurst: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(10)
      .describe('Failed logins a client address (IPv6: its /64) may make before it is refused 429.'),
    clientRefillSeconds: z
      .number()
      .positive()
      .max(3600)
      .default(6)
      .describe('Seconds for a client address to earn back one failed login.'),
    accountBurst: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(20)
      .describe(
        'Failed logins on one username before only clients without recent ' +
          'failures may still try it (NIST SP 800-63B §5.2.2: at most 100).',
      ),
    accountRefillSeconds: z
      .number()
      .positive()
      .max(3600)
      .default(30)
      .describe('Seconds for a username to earn back one failed login.'),
    lockedAccountCleanTries: z
      .number()
      .int()
      .min(1)
      .max(100)
      .default(5)
      .describe(
        'While a username is locked: failed logins all clients without recent ' +
          'failures may still make on it together, one earned back per ' +
          'accountRefillSeconds.',
      ),
    knownClientSeconds: z
      .number()
      .int()
      .min(0)
      .max(365 * 86400)
      .default(30 * 86400)
      .describe(
        'A client address (IPv6: its /64) that signed in to a username keeps ' +
          'its attempt there while the username is locked, for this long.',
      ),
    hashConcurrency: z
      .number()
      .int()
      .min(1)
      .max(16)
      .default(2)
      .describe('Password hashes computed at once (scrypt runs on the libuv pool).'),
    hashQueuePerClient: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(16)
      .describe('Logins one client address may have waiting or hashing; more are refused 429.'),
    hashQueueTotal: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .default(256)
      .describe('Logins waiting or hashing in all; more are refused 503 login_busy.'),
    trackedKeys: z
      .number()
      .int()
      .min(100)
      .max(10_000_000)
      .default(100_000)
      .describe(
        'Blocked client addresses each process remembers, to refuse their attempts without a database read ' +
          '(the counters themselves are in the database; the longest-blocked dropped first).',
      ),
  })
  .prefault({});
