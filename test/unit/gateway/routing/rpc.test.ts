import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../../../../gateway/errors/api-error.ts';
import type { RequestContext } from '../../../../gateway/http/context.ts';
import type { RpcServices } from '../../../../gateway/module.ts';
import { compileRpc } from '../../../../gateway/routing/rpc.ts';
import { RetrievalService } from '../../../../proto/gen/platform/retrieval/v1/retrieval_pb.ts';
import { testPlan } from '../../../helpers/request-plan.ts';

/** Runs the RPC route of `path` as the pipeline would; no request reaches Connect when the load fails. */
async function dispatch(rpc: RpcServices, path: string): Promise<unknown> {
  const route = compileRpc([{ rpc }], testPlan())?.match(path);
  assert.ok(route, `${path} is routed to the RPC`);
  try {
    await route.stages[0]?.run({} as RequestContext);
    return null;
  } catch (error) {
    return error;
  }
}

function assertUnavailable(error: unknown): void {
  assert.ok(error instanceof ApiError);
  assert.equal(error.status, 503);
  assert.equal(error.reason, 'rpc_unavailable');
  assert.doesNotMatch(JSON.stringify(error.body('req')), /boom|declared/, 'the cause stays in the log');
}

test('declared services are routed before anything is loaded; other paths are not', () => {
  let loads = 0;
  const mount = compileRpc(
    [
      {
        rpc: {
          services: ['pkg.v1.Service'],
          load: () => {
            loads += 1;
            return Promise.resolve(() => {});
          },
        },
      },
    ],
    testPlan(),
  );
  assert.ok(mount?.match('/pkg.v1.Service/Method'));
  assert.equal(mount?.match('/pkg.v1.Other/Method'), null);
  assert.equal(mount?.match('/api/ping'), null);
  assert.equal(loads, 0);
  assert.equal(compileRpc([{}], testPlan()), null, 'no module serves an RPC');
});

test('an implementation that fails to load is a 503 rpc_unavailable, and the next RPC tries again', async () => {
  let loads = 0;
  const rpc: RpcServices = {
    services: ['pkg.v1.Service'],
    load: () => {
      loads += 1;
      return Promise.reject(new Error('boom'));
    },
  };
  const route = compileRpc([{ rpc }], testPlan())?.match('/pkg.v1.Service/Method');
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    await assert.rejects(Promise.resolve(route?.stages[0]?.run({} as RequestContext)), (error: unknown) => {
      assertUnavailable(error);
      return true;
    });
    assert.equal(loads, attempt);
  }
});

test('a service registered under a name its module did not declare fails the load', async () => {
  const rpc: RpcServices = {
    services: ['pkg.v1.Service'],
    load: () => Promise.resolve((router) => router.service(RetrievalService, {})),
  };
  assertUnavailable(await dispatch(rpc, '/pkg.v1.Service/Method'));
});
