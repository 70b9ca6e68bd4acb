/** Reasons of the serving domain: the deployments registry and the runtime proxy. */
import { defineErrors } from '../../gateway/errors/api-error.ts';

export const ServingErrors = defineErrors('serving', {
  deployment_not_found: { status: 404, doc: 'No deployment of that kind has this id (or the caller may not see it).' },
  deployment_name_taken: { status: 409, doc: 'A deployment of the same kind already has this name.' },
  upstream_unreachable: {
    status: 502,
    doc: "The deployment's upstream refused or dropped the connection, or could not be resolved.",
  },
  upstream_bad_response: {
    status: 502,
    doc: 'The upstream answered with something that is not valid HTTP, or closed mid-response.',
  },
  upstream_timeout: { status: 504, doc: 'The upstream did not answer (or connect) within the deployment timeout.' },
  upstream_unavailable: {
    status: 503,
    doc: 'The connection pool of the upstream is closing (deployment removed, gateway shutting down).',
  },
  upstream_busy: {
    status: 503,
    doc:
      'The deployment had no free slot (`max_concurrent`, `serving.maxConcurrentRequests`) within its ' +
      '`queue_timeout_ms`; `retry_after` (also the Retry-After header) says when to try again.',
  },
  no_healthy_upstream: {
    status: 503,
    doc:
      'Every replica of the deployment is out of rotation (failed probes, or failures in a row); Retry-After says ' +
      'when to try again.',
  },
  rate_limited: {
    status: 429,
    doc: "The caller exceeded the deployment's `rate_limit`; `retry_after` (also the Retry-After header) in seconds.",
  },
  upstream_not_configured: {
    status: 503,
    doc: 'The service is enabled in the routing configuration but the operator configured no upstream for it.',
  },
  legacy_ports_disabled: {
    status: 422,
    doc:
      '`legacy_port` was given but the operator has not enabled legacy port ' +
      'listeners (`serving.legacyPortListeners`, ' +
      '`PLATFORM_SERVING_LEGACY_PORTS`).',
  },
  legacy_port_unavailable: {
    status: 409,
    doc: 'The legacy port is held by another deployment, or the gateway cannot bind it (in use, privileged).',
  },
  websocket_not_enabled: {
    status: 400,
    doc: 'A websocket upgrade reached a deployment whose `websocket` option is off.',
  },
});
