/** Reasons of the native realm. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const AuthErrors = defineErrors('auth', {
  invalid_credentials: {
    status: 401,
    doc: 'Username or password wrong, or the user is disabled (POST /api/auth/token).',
    stringDetail: 'Invalid credentials',
  },
  invalid_refresh_token: {
    status: 401,
    doc: 'The refresh token is unknown, expired or already used.',
    stringDetail: 'Invalid refresh token',
  },
  too_many_attempts: {
    status: 429,
    doc:
      'Login throttled: too many failed logins from this client address (or ' +
      'on this username from a client that failed recently), or too many ' +
      'logins of this client in flight. `retry_after` (seconds) is also sent ' +
      'as the Retry-After header.',
  },
  validation_throttled: {
    status: 429,
    doc:
      'GET /api/auth/validate: this client presented too many invalid ' +
      'credentials; `retry_after` (seconds) is also the Retry-After header. ' +
      'A proxy in front should be listed in ' +
      '`auth.forwardAuth.trustedProxies`.',
  },
  login_busy: {
    status: 503,
    doc: 'Too many logins waiting for a password check in all; retry after `retry_after` seconds (Retry-After header).',
  },
  user_is_caller: {
    status: 409,
    doc: 'An administrator cannot disable their own account (another administrator or `meshgate user disable` can).',
  },
  unsupported_grant_type: { status: 400, doc: 'grant_type is neither `password` nor `refresh_token`.' },
  pat_not_found: { status: 404, doc: 'No PAT with that jti belongs to the caller.' },
  pat_ttl_out_of_range: {
    status: 422,
    doc: 'ttl_seconds is outside the allowed PAT lifetime (see GET /api/auth/pat-config).',
  },
  pat_scope_invalid: {
    status: 422,
    doc: "scope is not one of the available PAT scopes, or exceeds the caller's own roles.",
  },
  user_exists: { status: 409, doc: 'A user with that username already exists.' },
  user_not_found: { status: 404, doc: 'No user with that id or username.' },
  attribute_name_reserved: {
    status: 422,
    doc:
      'An attribute name collides with a standard token claim (sub, roles, ' +
      'tenant_id, ...); `names` lists them. Attributes become top-level ' +
      'claims.',
  },
  attribute_not_found: {
    status: 404,
    doc: 'No attribute of that name was ever declared (GET/DELETE /api/cluster/attribute-schema/{name}).',
  },
  attribute_shape_conflict: {
    status: 400,
    doc:
      'PUT /api/cluster/attribute-schema/{name} with a different type, ' +
      'sensitivity, authority or schema_version than the declared attribute ' +
      '(`fields` lists them), or a type the values subjects already hold do ' +
      'not have (`subjects_holding_other_type`).',
  },
  attribute_in_use: {
    status: 409,
    doc:
      'Withdrawing an attribute that subjects still hold ' +
      '(`subjects_holding_value`); repeat with `force=true` to withdraw it ' +
      'anyway.',
  },
  attribute_not_declared: {
    status: 400,
    doc:
      'A subject write sets a new value for a deprecated or withdrawn ' +
      'attribute (`state`); only declared attributes take new values.',
  },
  attribute_value_invalid: {
    status: 400,
    doc: "A subject write sets a value that is not of the declared attribute's `type`.",
  },
});
