import { runJobRuntimeContract } from '../../../../contract/job-runtime.contract.ts';

runJobRuntimeContract({ name: 'local', config: () => ({ jobs: { runtime: 'local', local: { stopGraceMs: 1000 } } }) });
