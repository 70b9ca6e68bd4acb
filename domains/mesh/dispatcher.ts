/**
 * The mesh egress dispatcher of one peer: the peer's agent
 * (stored CA, SNI hostname, keep-alive pool) composed with
 * `upstreamErrors → deadline → meshSign`, outermost first. undici's
 * compose() wraps inside-out, so the call lists them closest-to-socket
 * first. No retry interceptor: a mesh request may carry a streamed body or
 * stream its answer (SSE), and replaying a signed request after the peer
 * saw it is not idempotent for the caller; the first attempt's outcome is
 * what the caller gets.
 */
import type { Dispatcher } from 'undici';
import type { ApiError } from '../../gateway/errors/api-error.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import { meshSign, type SignOptions } from '../../gateway/mesh/sign.ts';
import { classifyTransportError } from '../../gateway/mesh/transport-errors.ts';

export interface Deadlines {
  /** Read timeout for /api paths (60 s). */
  apiMs: number;
  /** Read timeout for /runtime paths (600 s). */
  runtimeMs: number;
}

/** Sets the read timeouts (headers, then between body chunks) by the remote path's class. */
export function deadline(deadlines: Deadlines): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) => {
    const ms = opts.path.startsWith('/runtime/') ? deadlines.runtimeMs : deadlines.apiMs;
    return dispatch({ ...opts, headersTimeout: ms, bodyTimeout: ms }, handler);
  };
}

/** Transport failures, as the one classifier reads them: a timeout is 504 mesh_proxy_timeout, the rest 502. */
export function upstreamError(error: unknown): ApiError {
  const failure = classifyTransportError(error);
  if (failure.status === 504) return MeshErrors.make.mesh_proxy_timeout({}, error);
  return MeshErrors.make.mesh_proxy_bad_gateway({ layer: failure.layer, cause: failure.reason }, error);
}

export function upstreamErrors(): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (opts, handler) =>
    dispatch(opts, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, status, headers, socket) =>
        handler.onRequestUpgrade?.(controller, status, headers, socket),
      onResponseStart: (controller, status, headers, message) =>
        handler.onResponseStart?.(controller, status, headers, message),
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      // A caller abort is not an upstream failure: pass it as is.
      onResponseError: (controller, error) =>
        handler.onResponseError?.(
          controller,
          error.name === 'AbortError' || (error as { code?: string }).code === 'UND_ERR_ABORTED'
            ? error
            : upstreamError(error),
        ),
    });
}

export function composeMeshDispatcher(agent: Dispatcher, sign: SignOptions, deadlines: Deadlines): Dispatcher {
  return agent.compose(meshSign(sign), deadline(deadlines), upstreamErrors());
}
