/** Routing configuration and health (liveness and readiness): provides the gateway's ROUTING_SOURCE. */
import type { HandlerModule } from '../../gateway/module.ts';
import { ROUTING_SOURCE } from '../../gateway/routing/source.ts';
import { RoutingErrors } from './errors.ts';
import { createReadinessProbe } from './readiness.ts';
import { routingRoutes } from './routes.ts';
import { RoutingService } from './service.ts';
import { createRoutingStore } from './store.ts';

/** The prefix of each service when the routing configuration sets none (docs/wire.md). */
export { DEFAULT_PREFIXES } from './validate.ts';

export const routingModule: HandlerModule = {
  name: 'routing',
  errors: RoutingErrors,
  init(deps) {
    const service = new RoutingService(createRoutingStore(deps.db), deps.runtime.origin, deps.now);
    // A PATCH answered by another process swaps this one's live table too.
    deps.feed.subscribe('routing_config', () => service.republish());
    deps.feed.onReset('routing_config', () => service.republish());
    deps.services.provide(ROUTING_SOURCE, service);
    const ready = createReadinessProbe(deps.sql);
    return { routes: routingRoutes(service, deps.config.limits.maxBodyBytes, deps.now, ready) };
  },
};
