/** HTTP surface of the native realm: parsing only, logic in service.ts. */
import { z } from 'zod';
import { parseQuery, readForm, readJson } from '../../gateway/http/body.ts';
import { type NodeRequest, principalOf } from '../../gateway/http/context.ts';
import type { RouteDef } from '../../gateway/module.ts';
import { jsonObject } from '../../gateway/openapi/route-docs.ts';
import { AuthErrors } from './errors.ts';
import { logoutAnswer, patConfigAnswer, patCreatedAnswer, patListAnswer } from './response-wire.ts';
import type { AuthService } from './service.ts';
import type { TokenSigner } from './tokens.ts';
import { type UserDirectory, userView } from './users.ts';

const tokenForm = z.object({
  grant_type: z.string().default('password'),
  username: z.string().optional(),
  password: z.string().optional(),
  refresh_token: z.string().optional(),
  scope: z.string().optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});

/** The token endpoint's answer (RFC 6749 §5.1). */
const tokenAnswer = z.object({
  access_token: z.string(),
  token_type: z.literal('bearer'),
  expires_in: z.number(),
  refresh_token: z.string(),
});
/** The caller as a service sees them; mesh callers also carry `external_id` and `source_cluster_id`. */
const meAnswer = z.looseObject({
  sub: z.string(),
  username: z.string(),
  roles: z.array(z.string()),
  source: z.enum(['local', 'mesh']),
});
const refreshQuery = z.object({ refresh_token: z.string().min(1) });
const jtiParams = z.object({ jti: z.string().min(1) });

const patInput = z.object({
  name: z.string().max(200).optional(),
  ttl_seconds: z.coerce.number().int().optional(),
  scope: z.string().optional(),
  aud: z.string().optional(),
});

/** `endpoints()` is where the realm is served now; it differs from the issuer when that is the cluster identity. */
export function authRoutes(
  service: AuthService,
  signer: TokenSigner,
  jwks: () => unknown,
  maxBody: number,
  endpoints: () => string,
  /** The caller's address the login throttle counts: the socket peer, or the client a trusted proxy forwarded for. */
  clientAddress: (req: NodeRequest) => string,
): RouteDef[] {
  return [
    {
      method: 'POST',
      path: '/auth/token',
      auth: 'none',
      doc: {
        summary: 'Sign in (grant_type=password) or refresh (grant_type=refresh_token): an access and a refresh token',
        form: tokenForm,
        answers: { 200: tokenAnswer },
        errors: [
          'invalid_credentials',
          'invalid_refresh_token',
          'too_many_attempts',
          'login_busy',
          'unsupported_grant_type',
        ],
      },
      async handle(ctx) {
        const form = await readForm(ctx.req, maxBody, tokenForm);
        if (form.grant_type === 'password') {
          const body = await service.login(form.username ?? '', form.password ?? '', clientAddress(ctx.req));
          return { status: 200, body, headers: { 'cache-control': 'no-store' } };
        }
        if (form.grant_type === 'refresh_token') {
          return {
            status: 200,
            body: await service.refresh(form.refresh_token ?? ''),
            headers: { 'cache-control': 'no-store' },
          };
        }
        throw AuthErrors.make.unsupported_grant_type({ grant_type: form.grant_type });
      },
    },
    {
      // The refresh token travels in the query string, as the platform's public client sends it (docs/auth.md).
      method: 'POST',
      path: '/auth/refresh',
      auth: 'none',
      doc: {
        summary: 'Exchange a refresh token (sent in the query) for new tokens',
        query: refreshQuery,
        answers: { 200: tokenAnswer },
        errors: ['invalid_refresh_token'],
      },
      async handle(ctx) {
        const { refresh_token } = parseQuery(ctx.query, refreshQuery);
        return { status: 200, body: await service.refresh(refresh_token), headers: { 'cache-control': 'no-store' } };
      },
    },
    {
      method: 'POST',
      path: '/auth/logout',
      auth: 'user',
      nativeOnly: true,
      doc: { summary: "End the caller's session: its refresh family is revoked", answers: { 200: logoutAnswer } },
      handle: (ctx) => ({ status: 200, body: service.logout(principalOf(ctx)) }),
    },
    {
      method: 'GET',
      path: '/auth/users/me',
      auth: 'user',
      doc: { summary: 'The caller', answers: { 200: meAnswer } },
      handle: (ctx) => ({ status: 200, body: service.me(principalOf(ctx)) }),
    },
    // The caller as this gateway sees them, mesh-brokered callers included (the same body as /auth/users/me).
    {
      method: 'GET',
      path: '/whoami',
      auth: 'user',
      doc: { summary: 'The caller as this gateway sees them', answers: { 200: meAnswer } },
      handle: (ctx) => ({ status: 200, body: service.me(principalOf(ctx)) }),
    },
    {
      // The platform's public client sends query parameters; a JSON body is also accepted.
      method: 'POST',
      path: '/auth/pats',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary: 'Create a personal access token (fields in the query, or a JSON body); the token is shown once',
        query: patInput,
        body: patInput.optional(),
        answers: { 200: patCreatedAnswer },
        errors: ['pat_ttl_out_of_range', 'pat_scope_invalid'],
      },
      async handle(ctx) {
        const fromQuery = parseQuery(ctx.query, patInput);
        const hasBody =
          Number(ctx.req.headers['content-length'] ?? 0) > 0 || ctx.req.headers['transfer-encoding'] !== undefined;
        const fromBody = hasBody ? await readJson(ctx.req, maxBody, patInput.optional()) : undefined;
        return {
          status: 200,
          body: await service.createPat(principalOf(ctx), { ...fromBody, ...stripUndefined(fromQuery) }),
        };
      },
    },
    {
      method: 'GET',
      path: '/auth/pats',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary: "The caller's personal access tokens (never the secrets)",
        answers: { 200: patListAnswer },
      },
      handle: (ctx) => ({ status: 200, body: service.listPats(principalOf(ctx)) }),
    },
    {
      method: 'DELETE',
      path: '/auth/pats/:jti',
      auth: 'user',
      nativeOnly: true,
      doc: {
        summary: "Revoke one of the caller's personal access tokens",
        params: jtiParams,
        answers: { 200: z.object({ revoked: z.boolean(), jti: z.string() }) },
        errors: ['pat_not_found'],
      },
      handle: (ctx) => ({ status: 200, body: service.revokePat(principalOf(ctx), ctx.params.jti as string) }),
    },
    {
      method: 'GET',
      path: '/auth/pat-config',
      auth: 'user',
      doc: { summary: 'Limits of personal access tokens (TTL bounds, scopes)', answers: { 200: patConfigAnswer } },
      handle: () => ({ status: 200, body: service.patConfig() }),
    },
    {
      method: 'GET',
      path: '/auth/jwks',
      auth: 'none',
      doc: {
        summary: "The realm's token signing keys (RFC 7517 JWK set)",
        answers: { 200: z.looseObject({ keys: z.array(jsonObject) }) },
      },
      handle: () => ({ status: 200, body: jwks(), headers: { 'cache-control': 'public, max-age=300' } }),
    },
    {
      method: 'GET',
      path: '/auth/.well-known/openid-configuration',
      auth: 'none',
      doc: {
        summary: 'OpenID Connect discovery of the native realm',
        answers: { 200: z.looseObject({ issuer: z.string(), jwks_uri: z.string() }) },
      },
      handle: () => ({ status: 200, body: discovery(signer.issuerUrl, endpoints(), signer.algorithm) }),
    },
    {
      method: 'GET',
      path: '/auth/health',
      auth: 'none',
      doc: {
        summary: 'Liveness of the auth service',
        answers: { 200: z.object({ status: z.string(), PLATFORM_USE_AUTH: z.boolean() }) },
      },
      handle: () => ({ status: 200, body: { status: 'healthy', PLATFORM_USE_AUTH: true } }),
    },
    {
      method: 'GET',
      path: '/auth/',
      auth: 'none',
      doc: {
        summary: 'The auth service root',
        answers: { 200: z.object({ message: z.string(), issuer: z.string() }) },
      },
      handle: () => ({ status: 200, body: { message: 'Platform Auth Service', issuer: signer.issuerUrl } }),
    },
  ];
}

const userAnswer = z.looseObject({
  id: z.string(),
  username: z.string(),
  roles: z.array(z.string()),
  active: z.boolean(),
});

/** The platform SDK's `update_user` body; `active: false` disables the user, `true` enables it. */
const userUpdate = z.strictObject({ active: z.boolean() });

/** Administration of users by the native realm's administrators (the SDK's `get_user` / `update_user`). */
export function userRoutes(users: UserDirectory, maxBody: number): RouteDef[] {
  const admin = { auth: 'admin', nativeOnly: true } as const;
  const errors = ['user_not_found'];
  const find = (id: string) => {
    const user = users.resolve(id);
    if (!user) throw AuthErrors.make.user_not_found({ user: id });
    return user;
  };
  return [
    {
      ...admin,
      method: 'GET',
      path: '/auth/users',
      doc: { summary: 'Every user of the native realm', answers: { 200: z.array(userAnswer) } },
      handle: () => ({ status: 200, body: users.list().map(userView) }),
    },
    {
      ...admin,
      method: 'GET',
      path: '/auth/users/:id',
      doc: { summary: 'A user, by id or username', answers: { 200: userAnswer }, errors },
      handle: (ctx) => ({ status: 200, body: userView(find(ctx.params.id as string)) }),
    },
    {
      ...admin,
      method: 'PUT',
      path: '/auth/users/:id',
      doc: {
        summary: 'Enable or disable a user',
        body: userUpdate,
        answers: { 200: userAnswer },
        errors: [...errors, 'user_is_caller'],
      },
      async handle(ctx) {
        const { active } = await readJson(ctx.req, maxBody, userUpdate);
        const user = find(ctx.params.id as string);
        if (!active && user.id === principalOf(ctx).userId) throw AuthErrors.make.user_is_caller({ id: user.id });
        return { status: 200, body: userView(users.setDisabled(user.id, !active)) };
      },
    },
  ];
}

function discovery(issuer: string, base: string, algorithm: string) {
  return {
    issuer,
    jwks_uri: `${base}/jwks`,
    token_endpoint: `${base}/token`,
    userinfo_endpoint: `${base}/users/me`,
    end_session_endpoint: `${base}/logout`,
    grant_types_supported: ['password', 'refresh_token'],
    response_types_supported: ['token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [algorithm],
    token_endpoint_auth_methods_supported: ['none'],
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'jti', 'preferred_username', 'email', 'roles', 'tenant_id'],
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
