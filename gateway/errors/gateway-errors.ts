/** Reasons owned by the gateway itself: transport, limits, paths, authentication. */
import { defineErrors } from './api-error.ts';

export const GatewayErrors = defineErrors('gateway', {
  request_validation_failed: {
    status: 422,
    doc: 'The request body or query failed validation; `detail` is a FastAPI-style list of problems.',
  },
  not_authenticated: {
    status: 401,
    doc: 'No credential, or the bearer token / PAT is invalid, expired or revoked.',
    stringDetail: 'Not authenticated',
  },
  cross_origin_session: {
    status: 403,
    doc:
      'The session cookie came on an API request not proven to come from the ' +
      "gateway's own origin (`Origin`, or `Sec-Fetch-Site: same-origin` on a " +
      'GET), or on a websocket handshake whose `Origin` is neither the gateway’s nor the one it reached; send a ' +
      'bearer token instead.',
  },
  admin_required: { status: 403, doc: 'The endpoint requires a native-realm administrator.' },
  endpoint_requires_native_realm: {
    status: 403,
    doc: 'The endpoint refuses credentials that arrived through the mesh.',
  },
  route_not_found: { status: 404, doc: 'No route matches the path.' },
  method_not_allowed: { status: 405, doc: 'The path exists but not for this method.' },
  service_disabled: { status: 404, doc: 'The path belongs to a service turned off in the routing configuration.' },
  non_canonical_path: {
    status: 400,
    doc:
      'The path has `..` or `.` segments, `//`, a backslash, control ' +
      'characters, bad percent-encoding, or an encoded slash outside a URN ' +
      'route.',
  },
  body_too_large: { status: 413, doc: 'The request body exceeds `limits.maxBodyBytes`.' },
  headers_too_large: { status: 431, doc: 'Too many request headers, or their total size exceeds the limit.' },
  unsupported_media_type: { status: 415, doc: 'The body has a content type the endpoint does not accept.' },
  storage_full: {
    status: 507,
    doc:
      'The disk holding the database is full (RFC 4918 §11.5); nothing was ' +
      'written. The same request succeeds once space is freed.',
  },
  cluster_node_unreachable: {
    status: 502,
    doc:
      'The request needs the cluster node that holds the work (a local job runs on one node), and that node did ' +
      'not answer. It is retried on the next request; a node silent past `nodes.deadAfterMs` has its jobs ended.',
  },
  rpc_unavailable: {
    status: 503,
    doc:
      'The gRPC services could not be loaded (they load on the first RPC); ' +
      'the log has the cause, and the next RPC tries again.',
  },
  internal_error: {
    status: 500,
    doc: 'An unexpected failure; the body carries only the request id, the log has the cause.',
  },
});
