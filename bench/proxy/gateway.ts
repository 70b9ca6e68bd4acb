/**
 * The meshgate under test, in its own process so `process.cpuUsage()` is
 * the proxy's alone: a fresh data dir, the plain-HTTP listener (nginx is
 * measured without TLS too), logs as shipped (stdout, which run.ts points
 * at a file, as nginx's access log is),
 * one model deployment in front of the bench upstream, and an admin token
 * (runtime URLs verify it on every request; verified tokens are cached).
 * Answers `usage` messages with its CPU time and RSS.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { loadConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/server.ts';

const upstream = process.argv[2] as string;
const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-bench-'));
const password = 'bench-admin-password';
const config = loadConfig({
  env: {},
  overrides: { dataDir, httpsPort: 0, httpPort: 0, bind: '127.0.0.1', bootstrapAdminPassword: password, logLevel: 'info' },
});
const gateway = await startGateway(config, { announce: () => {} });
const base = gateway.httpUrl as string;
const login = await request(`${base}/api/auth/token`, {
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ username: 'admin', password, grant_type: 'password' }).toString(),
});
const { access_token: token } = (await login.body.json()) as { access_token: string };
const created = await request(`${base}/api/serving/deployments`, {
  method: 'POST',
  headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  body: JSON.stringify({ kind: 'model', name: 'bench', upstream }),
});
const { id } = (await created.body.json()) as { id: string };
process.send?.({ url: `${base}/runtime/models/${id}`, token });
process.on('message', (message) => {
  if (message === 'usage') process.send?.({ cpu: process.cpuUsage(), rss: process.memoryUsage().rss });
});
process.on('disconnect', () => {
  void gateway.close(500).finally(() => {
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
