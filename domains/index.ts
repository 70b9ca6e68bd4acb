/**
 * The list of domains, in init order (a module may use services provided by
 * those before it). This is the only place the gateway learns of domains.
 */
import type { HandlerModule } from '../gateway/module.ts';
import { authModule } from './auth/index.ts';
import { authzModule } from './authz/index.ts';
import { catalogModule } from './catalog/index.ts';
import { clusterModule } from './cluster/index.ts';
import { federationModule } from './federation/index.ts';
import { gatesModule } from './gates/index.ts';
import { jobsModule } from './jobs/index.ts';
import { meshModule } from './mesh/index.ts';
import { retrievalModule } from './retrieval/index.ts';
import { routingModule } from './routing/index.ts';
import { servingModule } from './serving/index.ts';

export const DOMAIN_MODULES: readonly HandlerModule[] = [
  authModule,
  authzModule,
  routingModule,
  catalogModule,
  retrievalModule,
  federationModule,
  meshModule,
  jobsModule,
  servingModule,
  gatesModule,
  clusterModule,
];
