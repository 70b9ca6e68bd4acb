/** `/api/serving/deployments`: the registry over HTTP; parsing only, logic in service.ts. */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { deploymentInput, deploymentPatch } from './input.ts';
import type { DeploymentService } from './service.ts';
import { observedFields } from './wire.ts';

/** Models unless asked (this listing is the models one the SDK parses); `all` for every kind. */
const listQuery = z.object({ kind: z.enum(['model', 'app', 'tool', 'all']).default('model') });
const deploymentAnswer = z.looseObject({ id: z.string(), name: z.string(), ...observedFields });
const NOT_FOUND = ['deployment_not_found'];
const minuteAnswer = z.object({
  at: z.iso.datetime().describe('the minute'),
  requests_per_second: z.number(),
  client_errors: z.number().int().describe('4xx answers'),
  server_errors: z.number().int().describe("5xx answers, the gateway's own refusals included"),
  head_p50_ms: z.number().nullable().describe("time to the answer's head: the upper bound of the median's bucket"),
  head_p99_ms: z.number().nullable(),
});

export function servingRoutes(service: DeploymentService, maxBody: number): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/serving/deployments',
      auth: 'admin',
      doc: {
        summary: 'Register a deployment (a model, app or tool upstream served below /runtime)',
        body: deploymentInput,
        answers: { 201: deploymentAnswer },
        errors: ['deployment_name_taken', 'legacy_ports_disabled', 'legacy_port_unavailable'],
      },
      async handle(ctx) {
        const input = await readJson(ctx.req, maxBody, deploymentInput);
        return { status: 201, body: await service.create(principalOf(ctx), input) };
      },
    },
    {
      method: 'GET',
      path: '/serving/deployments',
      auth: 'user',
      doc: {
        summary: 'The deployments the caller may use, of one kind (models unless asked)',
        query: listQuery,
        answers: { 200: z.array(deploymentAnswer) },
      },
      handle: (ctx) => {
        const { kind } = parseQuery(ctx.query, listQuery);
        return { status: 200, body: service.list(principalOf(ctx), kind === 'all' ? undefined : kind) };
      },
    },
    {
      // The SDK's get_deployment_status: a bare JSON string; a registered route is live (wire.ts).
      method: 'GET',
      path: '/serving/deployment/:id/status',
      auth: 'user',
      doc: {
        summary: "A deployment's status as a JSON string",
        answers: { 200: z.literal('DEPLOYED') },
        errors: NOT_FOUND,
      },
      handle: (ctx) => {
        service.get(principalOf(ctx), ctx.params.id as string); // 404 when absent or not visible
        return { status: 200, body: 'DEPLOYED' };
      },
    },
    ...['/serving/deployments/:id', '/serving/deployment/:id' /* the SDK's get_deployment path */].map(
      (path): RouteDef => ({
        method: 'GET',
        path,
        auth: 'user',
        doc: { summary: 'A deployment', answers: { 200: deploymentAnswer }, errors: NOT_FOUND },
        handle: (ctx) => ({ status: 200, body: service.get(principalOf(ctx), ctx.params.id as string) }),
      }),
    ),
    {
      method: 'GET',
      path: '/serving/deployments/:id/traffic',
      auth: 'user',
      doc: {
        summary: "The last hour of a deployment's traffic, minute by minute, summed over every gateway process",
        answers: { 200: z.array(minuteAnswer) },
        errors: NOT_FOUND,
      },
      handle: (ctx) => ({ status: 200, body: service.traffic(principalOf(ctx), ctx.params.id as string) }),
    },
    {
      // Owners and administrators; mesh callers change nothing here.
      method: 'PATCH',
      path: '/serving/deployments/:id',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary:
          'Change a deployment: its visibility (its owner or an administrator), its replicas and data-plane ' +
          'settings (administrators)',
        body: deploymentPatch,
        answers: { 200: deploymentAnswer },
        errors: [...NOT_FOUND, 'admin_required'],
      },
      async handle(ctx) {
        const patch = await readJson(ctx.req, maxBody, deploymentPatch);
        return { status: 200, body: service.update(principalOf(ctx), ctx.params.id as string, patch) };
      },
    },
    {
      method: 'DELETE',
      path: '/serving/deployments/:id',
      auth: 'admin',
      doc: { summary: 'Remove a deployment', answers: { 204: null }, errors: NOT_FOUND },
      async handle(ctx) {
        await service.remove(principalOf(ctx), ctx.params.id as string);
        return { status: 204 };
      },
    },
    {
      // The SDK's stop_deployment (its `force` is ignored: nothing runs here to stop); it returns the body as its bool.
      method: 'DELETE',
      path: '/serving/deployment/:id',
      auth: 'admin',
      doc: { summary: 'Remove a deployment; answers `true`', answers: { 200: z.literal(true) }, errors: NOT_FOUND },
      async handle(ctx) {
        await service.remove(principalOf(ctx), ctx.params.id as string);
        return { status: 200, body: true };
      },
    },
  ];
}
