/**
 * HTTP surface of retrieval and of dataset gate binding: parsing only; logic in service.ts and gates/binding.ts.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { type NodeForwarder, onNode } from '../../gateway/cluster/forward.ts';
import { parseQuery, readJson, uuidParam } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import { type GateBindings, gateBindingAnswer, gateUnboundAnswer } from './gates/binding.ts';
import type { RetrievalService } from './service.ts';
import { streamSse } from './transports/sse.ts';
import { createBody, listQuery } from './wire.ts';

const gateBody = z.object({ type: z.string().min(1).max(1024), config: z.unknown().optional() });

const ok = (body: unknown) => ({ status: 200, body });
const jobParams = z.object({ id: z.uuid() });
const jobAnswer = z.looseObject({ job_id: z.string(), status: z.string() });
/** Reading a source: what the source's server, its options and its credentials may refuse. */
const SOURCE_REASONS = [
  'dataset_not_found',
  'source_unsupported',
  'dataset_location_missing',
  'path_not_allowed',
  'source_not_found',
  'unknown_column',
  'filter_value_invalid',
  'row_too_large',
  'source_unavailable',
  'source_auth_failed',
  'source_tls_failed',
  'source_access_denied',
  'source_credentials_missing',
  'source_options_invalid',
  'option_not_allowed',
  'credential_override_incomplete',
  'secret_unavailable',
  'secret_unreadable',
  'rebac_denied',
];
/** A record gate bound to the dataset decides before any row is read. */
const GATE_REASONS = ['gate_load_error', 'classpath_unimportable', 'classpath_not_allowed'];
const jobDoc = (summary: string, answer: z.ZodType, errors: string[] = []): RouteDoc => ({
  summary,
  params: jobParams,
  answers: { 200: answer },
  errors: ['retrieval_job_not_found', ...errors],
});

export interface RouteDeps {
  readonly service: RetrievalService;
  readonly gates: GateBindings;
  readonly maxBody: number;
  readonly heartbeatMs: number;
  readonly logger: Logger;
  /** Streams of a job bound to another cluster node are fetched from there. */
  readonly nodes: NodeForwarder;
}

export function retrievalRoutes({ service, gates, maxBody, heartbeatMs, logger, nodes }: RouteDeps): RouteDef[] {
  // A UUID path parameter; anything else is a 422, as on the jobs routes.
  const id = (ctx: RequestContext) => uuidParam(ctx.params, 'id');
  const urn = (ctx: RequestContext) => ctx.params.urn as string;
  const gateRoute = { path: '/catalog/datasets/:urn/gate', auth: 'user', allowEncodedSlash: true } as const;
  return [
    {
      method: 'POST',
      path: '/retrieval/jobs',
      auth: 'user',
      doc: {
        summary: 'Start a retrieval of a dataset (inline answers carry the rows)',
        body: createBody,
        answers: { 201: jobAnswer },
        errors: ['inline_threshold_exceeded', ...SOURCE_REASONS, ...GATE_REASONS],
      },
      async handle(ctx) {
        return {
          status: 201,
          body: await service.create(principalOf(ctx), await readJson(ctx.req, maxBody, createBody), ctx.span),
        };
      },
    },
    {
      method: 'GET',
      path: '/retrieval/jobs',
      auth: 'user',
      doc: { summary: "The caller's retrieval jobs", query: listQuery, answers: { 200: z.array(jobAnswer) } },
      handle(ctx) {
        const { limit, offset } = parseQuery(ctx.query, listQuery);
        return ok(service.list(principalOf(ctx), limit, offset));
      },
    },
    {
      method: 'GET',
      path: '/retrieval/jobs/:id',
      auth: 'user',
      doc: jobDoc('A retrieval job', jobAnswer),
      handle: (ctx) => ok(service.status(principalOf(ctx), id(ctx))),
    },
    {
      method: 'POST',
      path: '/retrieval/jobs/:id/cancel',
      auth: 'user',
      doc: jobDoc('Cancel a retrieval job', jobAnswer),
      handle: async (ctx) => ok(await service.cancel(principalOf(ctx), id(ctx))),
    },
    {
      method: 'GET',
      path: '/retrieval/jobs/:id/stream',
      auth: 'user',
      doc: {
        ...jobDoc("A retrieval job's rows as server-sent events", z.string(), [
          'retrieval_job_canceled',
          'retrieval_stream_on_other_node',
          'retrieval_override_lost',
          ...SOURCE_REASONS,
          ...GATE_REASONS,
        ]),
        answerMedia: 'text/event-stream',
      },
      async handle(ctx) {
        // A job bound to another node (its credential override lives there): the client follows the redirect.
        const node = service.streamRedirect(principalOf(ctx), id(ctx));
        if (node !== null && ctx.bearer !== null && !nodes.forwarded(ctx)) {
          await nodes.stream(ctx, node);
          return undefined;
        }
        // A caller without a token to send on (a session cookie) is sent to the node itself.
        if (node !== null) return { status: 307, headers: { location: onNode(node, ctx).href } };
        // Denials are thrown before the first byte, so they stay small JSON bodies.
        const stream = await service.stream(principalOf(ctx), id(ctx), ctx.span);
        await streamSse(ctx.res, stream, heartbeatMs, logger);
        return undefined;
      },
    },
    {
      ...gateRoute,
      method: 'PUT',
      nativeOnly: true,
      doc: {
        summary: 'Bind a record gate to a dataset',
        body: gateBody,
        answers: { 200: gateBindingAnswer },
        errors: [
          'dataset_not_found',
          'rebac_denied',
          'wrong_kind',
          'gate_config_invalid',
          'classpath_unimportable',
          'classpath_not_allowed',
        ],
      },
      async handle(ctx) {
        const body = await readJson(ctx.req, maxBody, gateBody);
        return ok(gates.put(principalOf(ctx), urn(ctx), body.type, body.config ?? {}));
      },
    },
    {
      ...gateRoute,
      method: 'GET',
      doc: {
        summary: 'The record gate bound to a dataset',
        answers: { 200: gateBindingAnswer },
        errors: ['dataset_not_found', 'not_configured', 'rebac_denied'],
      },
      handle: (ctx) => ok(gates.get(principalOf(ctx), urn(ctx))),
    },
    {
      ...gateRoute,
      method: 'DELETE',
      nativeOnly: true,
      doc: {
        summary: "Unbind a dataset's record gate",
        answers: { 200: gateUnboundAnswer },
        errors: ['dataset_not_found', 'not_configured', 'rebac_denied'],
      },
      handle: (ctx) => ok(gates.delete(principalOf(ctx), urn(ctx))),
    },
  ];
}
