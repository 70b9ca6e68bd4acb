/**
 * The Connect mapping point for ApiError (one to HTTP in
 * http/respond.ts, one to Connect here). The message is the stable reason;
 * anything that is not an ApiError becomes an opaque INTERNAL.
 */
import { Code, ConnectError } from '@connectrpc/connect';
import { ApiError } from './api-error.ts';

const BY_STATUS: Readonly<Record<number, Code>> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  409: Code.FailedPrecondition,
  413: Code.ResourceExhausted,
  422: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  502: Code.Unavailable,
  503: Code.Unavailable,
  504: Code.DeadlineExceeded,
};

export function toConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  if (!(error instanceof ApiError)) return new ConnectError('internal_error', Code.Internal);
  const problem = typeof error.extra.problem === 'string' ? `: ${error.extra.problem}` : '';
  return new ConnectError(`${error.reason}${problem}`, BY_STATUS[error.status] ?? Code.Internal);
}
