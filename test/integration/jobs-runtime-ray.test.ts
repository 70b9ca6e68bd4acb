import { after, before } from 'node:test';
import { runJobRuntimeContract } from '../contract/job-runtime.contract.ts';
import { startRay, stopRay } from '../helpers/ray.ts';

let dashboardUrl = '';
before(async () => {
  dashboardUrl = await startRay();
});
after(stopRay);

runJobRuntimeContract({ name: 'ray', config: () => ({ jobs: { runtime: 'ray', runPollIntervalMs: 100, ray: { dashboardUrl } } }) });
