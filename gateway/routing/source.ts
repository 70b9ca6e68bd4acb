/**
 * The live routing configuration as the kernel reads it: service → prefix
 * and service → enabled. The routing domain provides it; the composition
 * root subscribes and swaps the service table as a whole on each change.
 */
import { createServiceKey } from '../services.ts';

export interface RoutingSnapshot {
  readonly prefixes: Readonly<Record<string, string>>;
  readonly enabled: Readonly<Record<string, boolean>>;
}

/** Provided by the routing-config domain; the gateway subscribes to swap tables. */
export interface RoutingSource {
  current(): RoutingSnapshot;
  subscribe(listener: (snapshot: RoutingSnapshot) => void): void;
}

export const ROUTING_SOURCE = createServiceKey<RoutingSource>('routingSource');
