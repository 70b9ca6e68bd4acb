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
  ) {
    super(`${status} ${reason}`);
  }
}

function reasonOf(status: number, body: any): string {
  const detail = body?.detail;
  if (typeof detail === 'string') return detail;
  if (typeof detail?.reason === 'string') return detail.reason;
  return `HTTP ${status}`;
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
  if (!res.ok) throw new ApiFailure(res.status, reasonOf(res.status, parsed));
  return parsed as T;
}

/** Where the login page sends the browser back to after signing in. */
export function loginUrl(): string {
  return `/login?next=${encodeURIComponent(`${CONSOLE_BASE}${location.hash}`)}`;
}
