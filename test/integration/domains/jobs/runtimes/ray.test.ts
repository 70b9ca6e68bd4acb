import { after, before } from 'node:test';
import { runJobRuntimeContract } from '../../../../contract/job-runtime.contract.ts';
import { rayHead } from '../../../../helpers/ray.ts';

const ray = rayHead({ after });
let dashboardUrl = '';
before(async () => {
  dashboardUrl = await ray.start();
});

runJobRuntimeContract({
  name: 'ray',
  config: () => ({ jobs: { runtime: 'ray', runPollIntervalMs: 100, ray: { dashboardUrl } } }),
});
