/**
 * HTTP surface of federation management: native-realm admin everywhere
 * except ping (any authenticated user, never a mesh principal). Parsing
 * only; logic in service.ts, pairing.ts, diagnose.ts.
 */
import { z } from 'zod';
import { parseQuery, readJson } from '../../gateway/http/body.ts';
import { principalOf, type RequestContext } from '../../gateway/http/context.ts';
import type { RouteDef, RouteDoc } from '../../gateway/module.ts';
import { jsonObject } from '../../gateway/openapi/route-docs.ts';
import { applyDeclared, type DeclaredDeps } from './declared.ts';
import { declaredPeer } from './declared-file.ts';
import { diagnose, preflight, resolveAddress } from './diagnose.ts';
import { pair } from './pairing.ts';
import { createBody, forceQuery, listQuery, preflightBody, resolveBody } from './requests.ts';
import { endedAnswer, listedAnswer, pingAnswer, recordAnswer } from './wire.ts';

const BASE = '/cluster/federations';
const id = (ctx: RequestContext) => ctx.params.id as string;
const ok = (body: unknown) => ({ status: 200, body });
const updateBody = z.record(z.string(), z.unknown());
const FOUND = ['federation_not_found'];
const doc = (summary: string, answer: z.ZodType, extra: Omit<RouteDoc, 'summary' | 'answers'> = {}): RouteDoc => ({
  summary,
  answers: { 200: answer },
  ...extra,
});
/** A call to the peer: each failing layer has its reason. */
const PEER_CALL_REASONS = [
  'dns_unresolvable',
  'connection_failed',
  'connection_timeout',
  'tls_untrusted_ca',
  'tls_hostname_mismatch',
  'tls_handshake_failed',
  'peer_unreachable',
  'hmac_signature_invalid',
  'clock_skew',
  'peer_identity_mismatch',
  'peer_refused',
  'peer_response_invalid',
];

const applyBody = z.strictObject({ dry_run: z.boolean().default(false), peers: z.array(declaredPeer).max(10_000) });
const applyAnswer = z.object({ dry_run: z.boolean(), peers: z.array(jsonObject) });

export function federationRoutes(declared: DeclaredDeps, maxBody: number): RouteDef[] {
  const { ctx: fctx, service } = declared;
  return [
    {
      method: 'GET',
      path: BASE,
      auth: 'admin',
      doc: { summary: 'The federation records', query: listQuery, answers: { 200: z.array(listedAnswer) } },
      handle: (ctx) => ok(service.list(parseQuery(ctx.query, listQuery))),
    },
    {
      method: 'POST',
      path: BASE,
      auth: 'admin',
      doc: doc('Create a federation record (not yet paired)', recordAnswer, {
        body: createBody,
        errors: [
          'untrusted_federation_disabled',
          'identity_mode_unsupported',
          'psk_ambiguous',
          'peer_identity_aliases_local',
        ],
      }),
      handle: async (ctx) => ok(service.create(principalOf(ctx), await readJson(ctx.req, maxBody, createBody))),
    },
    {
      method: 'POST',
      path: `${BASE}/apply`,
      auth: 'admin',
      doc: doc('Reconcile the declared set of peers (docs/federation.md "Declared federation")', applyAnswer, {
        body: applyBody,
      }),
      handle: async (ctx) => {
        const body = await readJson(ctx.req, maxBody, applyBody);
        return ok({
          dry_run: body.dry_run,
          peers: await applyDeclared(declared, principalOf(ctx), body.peers, body.dry_run),
        });
      },
    },
    {
      method: 'POST',
      path: `${BASE}/preflight`,
      auth: 'admin',
      doc: doc('Check that remote addresses answer over TLS before pairing', jsonObject, { body: preflightBody }),
      handle: async (ctx) => ok(await preflight(fctx, (await readJson(ctx.req, maxBody, preflightBody)).remote_ips)),
    },
    {
      method: 'POST',
      path: `${BASE}/resolve-address`,
      auth: 'admin',
      doc: doc('Resolve a peer address (DNS) as pairing would', jsonObject, {
        body: resolveBody,
        errors: ['dns_unresolvable'],
      }),
      handle: async (ctx) => ok(await resolveAddress(fctx, (await readJson(ctx.req, maxBody, resolveBody)).address)),
    },
    {
      method: 'GET',
      path: `${BASE}/:id`,
      auth: 'admin',
      doc: doc('A federation record', listedAnswer, { errors: FOUND }),
      handle: (ctx) => ok(service.get(id(ctx))),
    },
    {
      // A free-form object; the service refuses changes outside the updatable fields.
      method: 'PUT',
      path: `${BASE}/:id`,
      auth: 'admin',
      doc: doc('Change the updatable fields of a federation record', recordAnswer, {
        body: updateBody,
        errors: [...FOUND, 'federation_field_immutable', 'federation_state_conflict'],
      }),
      handle: async (ctx) => ok(service.update(id(ctx), await readJson(ctx.req, maxBody, updateBody))),
    },
    {
      method: 'DELETE',
      path: `${BASE}/:id`,
      auth: 'admin',
      doc: doc('Delete a federation record (a paired one is disconnected first)', endedAnswer, {
        errors: [...FOUND, ...PEER_CALL_REASONS, 'peer_disconnect_failed'],
      }),
      handle: async (ctx) => ok(await service.delete(id(ctx))),
    },
    {
      method: 'POST',
      path: `${BASE}/:id/pair`,
      auth: 'admin',
      doc: doc('Pair with the remote cluster: exchange CAs and identities over the signed peer protocol', jsonObject, {
        errors: [
          ...FOUND,
          ...PEER_CALL_REASONS,
          'federation_already_paired',
          'federation_state_conflict',
          'psk_ambiguous',
          'peer_identity_aliases_local',
        ],
      }),
      handle: async (ctx) => ok(await pair(fctx, principalOf(ctx), id(ctx))),
    },
    {
      method: 'POST',
      path: `${BASE}/:id/disconnect`,
      auth: 'admin',
      doc: doc('Disconnect a paired federation (with `force`, even when the peer cannot be told)', endedAnswer, {
        query: forceQuery,
        errors: [...FOUND, ...PEER_CALL_REASONS, 'federation_state_conflict', 'peer_disconnect_failed'],
      }),
      handle: async (ctx) => ok(await service.disconnect(id(ctx), parseQuery(ctx.query, forceQuery).force)),
    },
    {
      method: 'POST',
      path: `${BASE}/:id/ping`,
      auth: 'user',
      nativeOnly: true,
      doc: doc('Ping a paired federation over the peer protocol', pingAnswer, {
        errors: [...FOUND, ...PEER_CALL_REASONS, 'federation_not_paired', 'peer_pairing_ended'],
      }),
      handle: async (ctx) => ok(await service.ping(id(ctx))),
    },
    {
      method: 'POST',
      path: `${BASE}/:id/diagnose`,
      auth: 'admin',
      doc: doc('Diagnose the path to a federation layer by layer (DNS, TCP, TLS, signature, clock)', jsonObject, {
        errors: FOUND,
      }),
      handle: async (ctx) => ok(await diagnose(fctx, id(ctx))),
    },
  ];
}
