/**
 * What a gateway does not load at start (bench/README.md, startup: each
 * costs resident memory and start time in every gateway process, used or
 * not): the optional sources' client libraries, the PostgreSQL driver, the
 * file parsers, the RPC libraries and Arrow, the OpenTelemetry SDK when no
 * endpoint is set, and, once the data dir holds its TLS material, the
 * certificate issuer. A child Node process records every module it
 * resolves, ESM and require alike, starts a real gateway (every module's
 * init run), then makes one gRPC call over verified TLS: the RPC libraries
 * load for it, Arrow (Flight streams only) still does not. The child runs
 * twice on one data dir, the second start being a warm one.
 * That the sources' libraries load on first use is shown by the tests that
 * read through them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const NOT_AT_START = [
  '@aws-sdk/client-s3',
  '@platformatic/kafka',
  'hive-driver',
  '@slack/web-api',
  'pg',
  'hyparquet',
  'csv-parse',
  'apache-arrow',
  '@connectrpc/connect',
  '@connectrpc/connect-node',
  '@bufbuild/protobuf',
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/resources',
  '@peculiar/x509',
  'reflect-metadata',
];
const ON_FIRST_RPC = ['@connectrpc/connect-node', '@bufbuild/protobuf'];

const CHILD =
  `
import { connect } from 'node:http2';
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    seen.push(specifier, result.url);
    return result;
  },
});
const { loadConfig } = await import(${JSON.stringify(import.meta.resolve('../../../gateway/config/load.ts'))});
const { startGateway } = await import(${JSON.stringify(import.meta.resolve('../../../app/server.ts'))});
const config = loadConfig({ env: {}, overrides: { dataDir: ` +
  `process.argv[1], httpsPort: 0, bind: '127.0.0.1', logLevel: 'error' } ` +
  `});
const gateway = await startGateway(config, { announce: () => {} });
const atStart = seen.length;
// One gRPC call with no token: an empty message, answered by Connect with a grpc-status.
const session = connect(gateway.httpsUrl, { ca: gateway.caPem, servername: 'localhost' });
const stream = session.request({
  ':method': 'POST',
  ':path': '/platform.retrieval.v1.RetrievalService/StreamData',
  'content-type': 'application/grpc',
  te: 'trailers',
});
const grpcStatus = await new Promise((resolve, reject) => {
  let status = null;
  stream.on('response', (headers) => { status = headers['grpc-status'] ?? status; });
  stream.on('trailers', (trailers) => { status = trailers['grpc-status'] ?? status; });
  stream.on('error', reject);
  stream.on('close', () => resolve(status));
  stream.resume();
  stream.end(Buffer.alloc(5));
});
session.close();
await gateway.close(500);
process.stdout.write(JSON.stringify({ atStart: seen.slice(0, atStart), afterRpc: seen, grpcStatus }));
`;

interface Seen {
  atStart: string[];
  afterRpc: string[];
  grpcStatus: string | null;
}

function runChild(dataDir: string): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', '--input-type=module', '--eval', CHILD, dataDir];
    execFile(process.execPath, args, { timeout: 60_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`child failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as Seen);
    });
  });
}

const isPackage = (entry: string, name: string) =>
  entry === name || entry.startsWith(`${name}/`) || entry.includes(`/node_modules/${name}/`);
const resolved = (seen: string[], name: string) => seen.filter((s) => isPackage(s, name));

test('gateway start loads none of the libraries only some requests need; the first RPC loads its own', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-lazy-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const first = await runChild(dataDir);
  assert.ok(resolved(first.atStart, '@peculiar/x509').length > 0, 'the first start issues the TLS material');
  const { atStart, afterRpc, grpcStatus } = await runChild(dataDir);
  // The hook saw the start: the database driver and the config schema's library load then.
  assert.ok(resolved(atStart, 'better-sqlite3').length > 0, 'the resolve hook recorded the start');
  assert.ok(resolved(atStart, 'zod').length > 0, 'the resolve hook recorded the start');
  for (const name of NOT_AT_START) assert.deepEqual(resolved(atStart, name), [], `${name} resolved at start`);
  // No token: UNAUTHENTICATED (16), answered by the Connect adapter the call loaded.
  assert.equal(grpcStatus, '16');
  for (const name of ON_FIRST_RPC) assert.ok(resolved(afterRpc, name).length > 0, `${name} loaded for the RPC`);
  assert.deepEqual(resolved(afterRpc, 'apache-arrow'), [], 'Arrow waits for a Flight stream');
});
