/**
 * Answers of the native realm's session and personal access token routes, as the API document states them;
 * the service's builders are typed by these schemas, so a field added, dropped or retyped fails the build.
 */
import { z } from 'zod';

/** The sign-out acknowledgement; the null fields are where an external identity provider's would go. */
export const logoutAnswer = z.object({
  message: z.string(),
  logout_time: z.string(),
  session_termination_requested: z.boolean(),
  front_channel_logout_url: z.null(),
  post_logout_redirect_uri: z.null(),
});

/** A personal access token's record, never the token itself. */
export const patAnswer = z.object({
  id: z.string(),
  jti: z.string(),
  owner_id: z.string(),
  name: z.string().nullable(),
  scope: z.string().nullable(),
  aud: z.string().nullable(),
  exp: z.number().int().describe('seconds since the epoch'),
  ttl_seconds: z.number().int(),
  tenant_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  revoked: z.boolean(),
});

/** A new token: the only answer that holds it. */
export const patCreatedAnswer = z.object({ token: z.string(), pat: patAnswer });

export const patListAnswer = z.object({ pats: z.array(patAnswer) });

export const patConfigAnswer = z.object({
  scope_hierarchy: z.array(z.string()),
  scope_labels: z.record(z.string(), z.string()),
  available_scopes: z.array(z.string()),
  default_scope: z.string(),
  ttl: z.object({ default_seconds: z.number(), min_seconds: z.number(), max_seconds: z.number() }),
});
