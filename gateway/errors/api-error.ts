/**
 * The one error type of meshgate. A refusal carries an HTTP
 * status and a stable snake_case `reason`; the wire body is FastAPI-style:
 * `{"detail":{"reason":...,...extra}}`, or a string
 * `detail` for the few refusals public clients match as strings (with the
 * fields beside it for those whose clients read both).
 */
export type ErrorExtra = Record<string, unknown>;

export interface ErrorDef {
  status: number;
  /** One line for ERRORS.md: when this reason is given. */
  doc: string;
  /** When set, the body is `{"detail": message}`: a plain string some clients match (docs/wire.md). */
  stringDetail?: string;
  /** With stringDetail: the fields go beside it, `{"detail": message, ...extra}` (a decision's answer). */
  fieldsBesideDetail?: boolean;
  /**
   * A sentence for people, sent as `detail.message` beside the reason: clients that show the raw body (the
   * platform SDK's retrieval exceptions print it whole when `detail` is not a string) then read as prose.
   */
  message?: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly extra: ErrorExtra;
  readonly stringDetail: string | undefined;
  /** With a string detail: whether `extra` is sent beside it. */
  readonly fieldsBesideDetail: boolean;
  /** FastAPI 422 list, for request validation failures. */
  readonly problems: ValidationProblem[] | undefined;

  constructor(
    status: number,
    reason: string,
    extra: ErrorExtra = {},
    options: {
      cause?: unknown;
      stringDetail?: string | undefined;
      fieldsBesideDetail?: boolean | undefined;
      problems?: ValidationProblem[];
    } = {},
  ) {
    super(reason, { cause: options.cause });
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.extra = extra;
    this.stringDetail = options.stringDetail;
    this.fieldsBesideDetail = options.fieldsBesideDetail ?? false;
    this.problems = options.problems;
  }

  /** The JSON body sent to the client. Never includes `cause` or a stack. */
  body(requestId: string): unknown {
    if (this.problems) return { detail: this.problems, request_id: requestId };
    if (this.stringDetail !== undefined)
      return this.fieldsBesideDetail ? { detail: this.stringDetail, ...this.extra } : { detail: this.stringDetail };
    return { detail: { reason: this.reason, ...this.extra, request_id: requestId } };
  }
}

/** One entry of a FastAPI-style 422 list. */
export interface ValidationProblem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export type ErrorFactory = (extra?: ErrorExtra, cause?: unknown) => ApiError;

export interface ErrorTable<R extends string = string> {
  readonly domain: string;
  readonly defs: Readonly<Record<R, ErrorDef>>;
  readonly make: Readonly<Record<R, ErrorFactory>>;
}

/**
 * Declares a domain's reasons once; returns typed factories so call sites
 * never spell a reason as a loose string: `AuthErrors.make.invalid_credentials()`.
 */
export function defineErrors<R extends string>(domain: string, defs: Record<R, ErrorDef>): ErrorTable<R> {
  const make = {} as Record<R, ErrorFactory>;
  for (const reason of Object.keys(defs) as R[]) {
    const def = defs[reason];
    const withMessage = (extra: ErrorExtra): ErrorExtra => (def.message ? { message: def.message, ...extra } : extra);
    make[reason] = (extra = {}, cause) =>
      new ApiError(def.status, reason, withMessage(extra), {
        cause,
        ...(def.stringDetail ? { stringDetail: def.stringDetail, fieldsBesideDetail: def.fieldsBesideDetail } : {}),
      });
  }
  return Object.freeze({ domain, defs: Object.freeze(defs), make: Object.freeze(make) });
}
