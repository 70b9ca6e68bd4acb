/**
 * The memory peer of bench/proxy/h2-memory.ts: the least an HTTP/2 reverse
 * proxy in Node can be — node:http2 TLS listener (same stream limit as the
 * gateway), one undici Pool (same size) to the upstream, bodies piped both
 * ways — with no pipeline, auth, logging or database. Its RSS under the same
 * load is the floor the gateway's RSS is compared with.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream';
import { type Dispatcher, Pool } from 'undici';
import { ensureTlsMaterial } from '../../gateway/tls/material.ts';

const upstream = process.argv[2] as string;
const tlsDir = mkdtempSync(join(tmpdir(), 'bench-bare-h2-'));
const tls = await ensureTlsMaterial({ tlsDir, names: ['127.0.0.1', 'localhost'], clusterName: 'bench' });
const pool = new Pool(upstream, { connections: 256, pipelining: 1 });
const server = createSecureServer(
  { allowHTTP1: true, key: tls.keyPem, cert: tls.certPem, settings: { maxConcurrentStreams: 128 } },
  (req, res) => {
    const path = (req.url ?? '/').replace(/^\/runtime\/models\/[^/]+/, '') || '/';
    pool
      .request({ path, method: req.method as Dispatcher.HttpMethod, body: req.method === 'POST' ? req : null })
      .then(({ statusCode, headers, body }) => {
        res.writeHead(statusCode, { 'content-type': String(headers['content-type'] ?? 'application/octet-stream') });
        pipeline(body, res, () => {});
      })
      .catch(() => {
        res.writeHead(502);
        res.end();
      });
  },
);
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port, caPem: tls.caPem }));
process.on('disconnect', () => {
  rmSync(tlsDir, { recursive: true, force: true });
  process.exit(0);
});
