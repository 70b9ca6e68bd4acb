/**
 * The retrieval RPCs — the gRPC stream (grpc.ts) and Arrow Flight
 * (flight.ts) — named by their .proto package and service, and loaded with
 * the Connect adapter on the first RPC (gateway/routing/rpc.ts): their
 * libraries and Arrow stay out of gateways that never serve one.
 */
import type { RpcServices } from '../../../gateway/module.ts';
import type { RetrievalService } from '../service.ts';
import type { StreamLocations } from '../stream.ts';

export const RETRIEVAL_RPC_SERVICES = ['platform.retrieval.v1.RetrievalService', 'arrow.flight.protocol.FlightService'];

/**
 * Where each protocol's stream is read, told in the job's `grpc` block before any RPC loads. Flight locations
 * are URIs of the gRPC transport (Flight.proto `Location`): grpc+tls is gRPC over TLS.
 */
export const STREAM_LOCATIONS: StreamLocations = {
  'arrow-flight': (host) => ({
    endpoints: [{ location: `grpc+tls://${host}` }],
    service: 'arrow.flight.protocol.FlightService',
  }),
  'platform.retrieval.v1': (host) => ({
    endpoint: `grpcs://${host}`,
    endpoints: [{ location: `grpcs://${host}` }],
    service: 'platform.retrieval.v1.RetrievalService',
  }),
};

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
