/**
 * The retrieval RPCs — the gRPC stream (grpc.ts) and Arrow Flight
 * (flight.ts) — named by their .proto package and service, and loaded with
 * the Connect adapter on the first RPC (gateway/routing/rpc.ts): their
 * libraries and Arrow stay out of gateways that never serve one.
 */
import type { RpcServices } from '../../../gateway/module.ts';
import type { RetrievalService } from '../service.ts';

export const RETRIEVAL_RPC_SERVICES = ['platform.retrieval.v1.RetrievalService', 'arrow.flight.protocol.FlightService'];

export function retrievalRpc(service: RetrievalService): RpcServices {
  return {
    services: RETRIEVAL_RPC_SERVICES,
    async load() {
      const [grpc, flight] = await Promise.all([import('./grpc.ts'), import('./flight.ts')]);
      return (router) => {
        grpc.registerRetrievalRpc(router, service);
        flight.registerFlightRpc(router, service);
      };
    },
  };
}
