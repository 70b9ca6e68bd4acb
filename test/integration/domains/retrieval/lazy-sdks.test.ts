/**
 * The optional sources' client libraries are not loaded when the gateway
 * starts (domains/retrieval/sources/lazy.ts: they would cost resident memory on every gateway, used or not). A child
 * Node process records every module it resolves, ESM and require alike,
 * starts a real gateway on a fresh data dir (every module's init run),
 * closes it and reports. That the libraries do load on first use is shown by the
 * retrieval-s3/kafka/hive/slack tests, which read through them.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const LAZY = ['@aws-sdk/client-s3', '@platformatic/kafka', 'hive-driver', '@slack/web-api'];

const CHILD =
  `
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({
  resolve(specifier, context, next) {
    const result = next(specifier, context);
    seen.push(specifier, result.url);
    return result;
  },
});
const { loadConfig } = await import(${JSON.stringify(import.meta.resolve('../../../../gateway/config/load.ts'))});
const { startGateway } = await import(${JSON.stringify(import.meta.resolve('../../../../app/server.ts'))});
const config = loadConfig({ env: {}, overrides: { dataDir: ` +
  `process.argv[1], httpsPort: 0, bind: '127.0.0.1', logLevel: 'error' } ` +
  `});
const gateway = await startGateway(config, { announce: () => {} });
await gateway.close(500);
process.stdout.write(JSON.stringify({ seen }));
`;

function runChild(dataDir: string): Promise<{ seen: string[] }> {
  return new Promise((resolve, reject) => {
    const args = ['--import', 'tsx', '--input-type=module', '--eval', CHILD, dataDir];
    execFile(process.execPath, args, { timeout: 60_000, maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`child failed: ${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout) as { seen: string[] });
    });
  });
}

const isPackage = (entry: string, name: string) =>
  entry === name || entry.startsWith(`${name}/`) || entry.includes(`/node_modules/${name}/`);

test('gateway start resolves none of the optional sources client libraries', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-lazy-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const { seen } = await runChild(dataDir);
  // The hook saw the retrieval sources' own imports: the filesystem source's parsers load at start.
  assert.ok(
    seen.some((s) => isPackage(s, 'hyparquet')),
    'the resolve hook recorded the retrieval sources',
  );
  for (const name of LAZY) {
    assert.deepEqual(
      seen.filter((s) => isPackage(s, name)),
      [],
      `${name} resolved at start`,
    );
  }
});
