import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RETRIEVAL_RPC_SERVICES } from '../../../../../domains/retrieval/transports/rpc.ts';
import { FlightService } from '../../../../../proto/gen/arrow/flight/protocol/Flight_pb.ts';
import { RetrievalService } from '../../../../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';

test('the retrieval RPCs are routed by the names their generated services carry', () => {
  assert.deepEqual(RETRIEVAL_RPC_SERVICES, [RetrievalService.typeName, FlightService.typeName]);
});
