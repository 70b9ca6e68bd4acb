/**
 * Buffered request bodies for API routes, bounded by limits.maxBodyBytes
 * (413 beyond, and the rest of the upload is not read), validated with zod
 * into FastAPI-style 422 lists.
 */
import { z } from 'zod';
import { ApiError, type ValidationProblem } from '../errors/api-error.ts';
import { GatewayErrors } from '../errors/gateway-errors.ts';
import type { NodeRequest, RequestQuery } from './context.ts';

export async function readBody(req: NodeRequest, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes)
    throw GatewayErrors.make.body_too_large({ max_bytes: maxBytes });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw GatewayErrors.make.body_too_large({ max_bytes: maxBytes });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function validate<S extends z.ZodType>(schema: S, value: unknown, root: 'body' | 'query' | 'path'): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const problems: ValidationProblem[] = parsed.error.issues.map((issue) => ({
    loc: [root, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issue.code,
  }));
  throw validationError(problems);
}

/** A UUID path parameter (the upstream's UUID path params answer 422 to anything else). */
export function uuidParam(params: Readonly<Record<string, string | undefined>>, name: string): string {
  return validate(z.object({ [name]: z.uuid() }), params, 'path')[name] as string;
}

export function validationError(problems: ValidationProblem[]): ApiError {
  return new ApiError(422, 'request_validation_failed', {}, { problems });
}

export async function readJson<S extends z.ZodType>(
  req: NodeRequest,
  maxBytes: number,
  schema: S,
): Promise<z.infer<S>> {
  const raw = await readBody(req, maxBytes);
  let value: unknown;
  if (raw.length > 0) {
    try {
      value = JSON.parse(raw.toString('utf8'));
    } catch {
      throw validationError([{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }]);
    }
  }
  return validate(schema, value, 'body');
}

export async function readForm<S extends z.ZodType>(
  req: NodeRequest,
  maxBytes: number,
  schema: S,
): Promise<z.infer<S>> {
  const type = String(req.headers['content-type'] ?? '');
  if (!type.startsWith('application/x-www-form-urlencoded')) {
    throw GatewayErrors.make.unsupported_media_type({ expected: 'application/x-www-form-urlencoded' });
  }
  const raw = await readBody(req, maxBytes);
  return validate(schema, Object.fromEntries(new URLSearchParams(raw.toString('utf8'))), 'body');
}

export function parseQuery<S extends z.ZodType>(query: RequestQuery, schema: S): z.infer<S> {
  return validate(schema, Object.fromEntries(query), 'query');
}
