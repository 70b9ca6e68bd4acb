/**
 * A local Slack Web API server on loopback (Slack is a SaaS):
 * the three methods the Slack source calls — conversations.list,
 * conversations.history, conversations.replies — with Slack's response
 * shapes (`ok`, `messages`, `has_more`, `response_metadata.next_cursor`,
 * `{ok:false,error}` failures), opaque base64 cursors, form-encoded POST
 * bodies, bearer-token auth, and 429 `Retry-After` answers on demand.
 * Every call is recorded (method, params, whether the token matched).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { After } from './peers/process.ts';

export type SlackMessage = Record<string, unknown> & { ts?: string; thread_ts?: string; reply_count?: number };

export interface SlackChannel {
  id: string;
  name: string;
  /** Newest first, as conversations.history returns them. */
  messages: SlackMessage[];
  /** Replies by parent ts, oldest first (the parent is prepended, as Slack does). */
  threads?: Record<string, SlackMessage[]>;
}

export interface SlackCall {
  method: string;
  params: Record<string, string>;
  authorized: boolean;
}

export interface SlackApi {
  /** Base URL for WebClient's slackApiUrl, ending in `/api/`. */
  url: string;
  calls: SlackCall[];
  /** Answer the next `count` calls with 429 and `Retry-After: seconds`. */
  rateLimitNext(count: number, seconds: number): void;
  stop(): Promise<void>;
}

const cursorFor = (offset: number) => Buffer.from(`next_ts:${offset}`).toString('base64');
const offsetOf = (cursor: string | undefined) =>
  cursor ? Number(Buffer.from(cursor, 'base64').toString('utf8').split(':')[1]) : 0;

function page<T>(items: readonly T[], params: Record<string, string>): { items: T[]; next: string } {
  const start = offsetOf(params.cursor);
  const limit = Math.min(Number(params.limit ?? 100) || 100, 1000);
  const items_ = items.slice(start, start + limit);
  return { items: items_, next: start + limit < items.length ? cursorFor(start + limit) : '' };
}

function inWindow(message: SlackMessage, params: Record<string, string>): boolean {
  if (message.ts === undefined || (params.oldest === undefined && params.latest === undefined)) return true;
  const ts = Number(message.ts);
  return (
    (params.oldest === undefined || ts >= Number(params.oldest)) &&
    (params.latest === undefined || ts <= Number(params.latest))
  );
}

function answer(
  channels: readonly SlackChannel[],
  method: string,
  params: Record<string, string>,
): Record<string, unknown> {
  if (method === 'conversations.list') {
    const { items, next } = page(channels, params);
    return {
      ok: true,
      channels: items.map((c) => ({ id: c.id, name: c.name, is_channel: true, is_archived: false })),
      response_metadata: { next_cursor: next },
    };
  }
  const channel = channels.find((c) => c.id === params.channel);
  if (!channel) return { ok: false, error: 'channel_not_found' };
  const source = method === 'conversations.history' ? channel.messages : channel.threads?.[params.ts ?? ''];
  if (!source) return { ok: false, error: method === 'conversations.replies' ? 'thread_not_found' : 'unknown_method' };
  const windowed =
    params.oldest === undefined && params.latest === undefined ? source : source.filter((m) => inWindow(m, params));
  const { items, next } = page(windowed, params);
  return { ok: true, messages: items, has_more: next !== '', pin_count: 0, response_metadata: { next_cursor: next } };
}

async function formOf(req: IncomingMessage): Promise<Record<string, string>> {
  let body = '';
  for await (const piece of req) body += piece;
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  return { ...Object.fromEntries(query), ...Object.fromEntries(new URLSearchParams(body)) };
}

export async function startSlackApi(t: After, token: string, channels: readonly SlackChannel[]): Promise<SlackApi> {
  const calls: SlackCall[] = [];
  let limited = { count: 0, seconds: 1 };
  const sockets = new Set<Socket>();
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const method = (req.url ?? '').replace(/^\/api\//, '').split('?')[0] as string;
    const params = await formOf(req);
    const authorized = req.headers.authorization === `Bearer ${token}`;
    calls.push({ method, params, authorized });
    if (limited.count > 0) {
      limited.count--;
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(limited.seconds) });
      res.end(JSON.stringify({ ok: false, error: 'ratelimited' }));
      return;
    }
    const body = authorized ? answer(channels, method, params) : { ok: false, error: 'invalid_auth' };
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stop = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.after(() => (server.listening ? stop() : undefined));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/api/`,
    calls,
    rateLimitNext: (count, seconds) => {
      limited = { count, seconds };
    },
    stop,
  };
}
