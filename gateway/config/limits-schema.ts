/**
 * The `limits` section of the configuration (gateway/config/schema.ts).
 */
import { z } from 'zod';

export const limitsSettings = z
  .strictObject({
    maxHeaderCount: z
      .number()
      .int()
      .min(8)
      .max(1000)
      .default(100)
      .describe('Most request headers accepted (431 beyond).'),
    maxHeaderBytes: z
      .number()
      .int()
      .min(1024)
      .max(1048576)
      .default(16384)
      .describe('Most total request-header bytes (431 beyond).'),
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .default(16 * 1024 * 1024)
      .describe('Most bytes of a buffered API request body (413 beyond).'),
    headersTimeoutMs: z
      .number()
      .int()
      .min(100)
      .default(30_000)
      .describe(
        'Absolute deadline for a request head, counted from its first byte ' +
          '(from the connection for the first one); an HTTP/2 session with no ' +
          'stream open (at its start, after its last one closes) must open one ' +
          'within it.',
      ),
    requestTimeoutMs: z
      .number()
      .int()
      .min(0)
      .default(300_000)
      .describe('HTTP/1.1: time allowed to receive a whole request; 0 = none.'),
    handshakeTimeoutMs: z
      .number()
      .int()
      .min(100)
      .default(10_000)
      .describe('Time a new connection has to complete its TLS handshake.'),
    maxConcurrentStreams: z
      .number()
      .int()
      .min(1)
      .max(65_535)
      .default(128)
      .describe(
        'HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: streams one connection may have open at once (RFC 9113 §6.5.2).',
      ),
    idleTimeoutMs: z
      .number()
      .int()
      .min(1000)
      .default(650_000)
      .describe(
        'A connection that moves no bytes either way for this long is closed; ' +
          'above the 600 s mesh runtime read timeout, and SSE heartbeats keep ' +
          'streams alive.',
      ),
  })
  .prefault({});
