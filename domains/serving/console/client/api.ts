/**
 * The console's only way to the gateway: the public API, same origin, the
 * session cookie attached by the browser. A refusal comes back as the
 * API's own reason so the page can show it as it is.
 */
const root = document.getElementById('app') as HTMLElement;

/** The API prefix and the console's own base path, as the shell states them. */
export const API = root.dataset.api ?? '/api';
export const CONSOLE_BASE = root.dataset.base ?? '/console/';
export const CLUSTER = root.dataset.cluster ?? '';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    /** A 422's messages by the body field they are about (`loc: ["body", field, ...]`), so a form shows each there. */
    readonly fields: Readonly<Record<string, string>> = {},
  ) {
    super(`${status} ${reason}`);
  }
}

function reasonOf(status: number, body: any): string {
  const detail = body?.detail;
  if (typeof detail === 'string') return detail;
  if (typeof detail?.reason === 'string') return detail.reason;
  if (Array.isArray(detail)) return 'request_validation_failed';
  return `HTTP ${status}`;
}

function fieldsOf(body: any): Record<string, string> {
  const fields: Record<string, string> = {};
  if (!Array.isArray(body?.detail)) return fields;
  for (const problem of body.detail) {
    const [where, field] = Array.isArray(problem?.loc) ? problem.loc : [];
    if (where === 'body' && typeof field === 'string') fields[field] ??= String(problem.msg ?? 'invalid');
  }
  return fields;
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers = { accept: 'application/json', 'content-type': 'application/json' };
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`${API}${path}`, init);
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  if (!res.ok) throw new ApiFailure(res.status, reasonOf(res.status, parsed), fieldsOf(parsed));
  return parsed as T;
}

/** Where the login page sends the browser back to after signing in. */
export function loginUrl(): string {
  return `/login?next=${encodeURIComponent(`${CONSOLE_BASE}${location.hash}`)}`;
}
