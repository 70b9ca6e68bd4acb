/**
 * One process taking tokens of a rate-limit bucket as fast as it can, as a node's gateway does
 * (domains/serving/store.ts `takeTokens`), for tests of the shared bucket under real concurrency:
 * `node --import tsx test/helpers/token-taker.ts <database url> <deployment id> <burst> <takes> <want> <now ms>`
 * waits for a line on stdin (so every process starts at once), then prints `granted <total> <least tokens seen>`.
 */
import { once } from 'node:events';
import { createDeploymentStore } from '../../domains/serving/store.ts';
import { openConfiguredDatabase } from '../../gateway/db/open.ts';

const [url = '', deploymentId = '', burst = '1', takes = '0', want = '1', nowMs = '0'] = process.argv.slice(2);
const opened = await openConfiguredDatabase({ dataDir: '', database: url });
const store = createDeploymentStore(opened.db);
const limit = { requests_per_second: 1, burst: Number(burst) };
process.stdout.write('ready\n');
await once(process.stdin, 'data');
let granted = 0;
let least = Number.POSITIVE_INFINITY;
for (let i = 0; i < Number(takes); i++) {
  const taken = store.takeTokens(deploymentId, 'user:local:alice', Number(want), limit, Number(nowMs));
  granted += taken.granted;
  least = Math.min(least, taken.tokens);
}
process.stdout.write(`granted ${granted} ${least}\n`);
opened.sql.close();
