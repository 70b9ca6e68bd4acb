/**
 * The list of domains, in init order (a module may use services provided by
 * those before it). This is the only place the gateway learns of domains.
 */
import type { HandlerModule } from '../gateway/module.ts';
import { authModule } from './auth/index.ts';
import { authzModule } from './authz/index.ts';
import { jobsModule } from './jobs/index.ts';
import { routingModule } from './routing/index.ts';

export const HANDLER_MODULES: readonly HandlerModule[] = [authModule, authzModule, routingModule, jobsModule];
