/**
 * Real upstreams on loopback for the serving tests: an OpenAI-compatible
 * model server (SSE streaming with a gate the test opens, so incremental
 * delivery is proven, not timed), an app with cookies, redirects and a
 * websocket, and a tool that streams bodies both ways. Each records the
 * last request's headers. Closed in t.after.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { type AddressInfo, createServer as createNetServer, type Socket } from 'node:net';
import { WebSocketServer } from 'ws';
import type { After, TestGateway } from './gateway.ts';

export interface Upstream {
  server: Server;
  url: string;
  lastHeaders: IncomingHttpHeaders | null;
  lastPath: string | null;
}

type Handler = (req: IncomingMessage, res: ServerResponse, up: Upstream) => void | Promise<void>;

async function serve(t: After, routes: Record<string, Handler>): Promise<Upstream> {
  const up: Upstream = { server: createServer(), url: '', lastHeaders: null, lastPath: null };
  up.server.on('request', (req, res) => {
    const path = (req.url ?? '/').split('?')[0] as string;
    up.lastHeaders = req.headers;
    up.lastPath = req.url ?? null;
    const route = routes[`${req.method} ${path}`] ?? routes[`* ${path}`];
    if (!route) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"upstream 404"}');
      return;
    }
    void route(req, res, up);
  });
  up.server.listen(0, '127.0.0.1');
  await once(up.server, 'listening');
  up.url = `http://127.0.0.1:${(up.server.address() as AddressInfo).port}`;
  t.after(async () => {
    up.server.closeAllConnections();
    await new Promise((resolve) => up.server.close(resolve));
  });
  return up;
}

async function readJsonBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
}

/** A gate the test opens: the model server holds its stream after the first chunk until then. */
export class Gate {
  #open!: () => void;
  readonly opened = new Promise<void>((resolve) => {
    this.#open = resolve;
  });
  open(): void {
    this.#open();
  }
}

/**
 * Drains a streamed chat completion from startModelServer(gate): the upstream
 * holds the rest of its stream until the gate opens, so data seen before we
 * open it proves nothing buffered on the way. Returns the streamed text.
 */
export async function readGatedCompletion(body: AsyncIterable<unknown>, gate: Gate): Promise<string> {
  const chunks: string[] = [];
  for await (const piece of body) {
    chunks.push(String(piece));
    if (chunks.length === 1) {
      assert.match(chunks[0] as string, /"content":"Hello"/);
      assert.ok(!chunks[0]?.includes('[DONE]'), 'the first chunk arrived before the upstream finished');
      gate.open();
    }
  }
  const events = chunks
    .join('')
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  assert.equal(events.at(-1), '[DONE]');
  return events
    .slice(0, -1)
    .map((e) => JSON.parse(e).choices[0].delta.content)
    .join('');
}

export async function startModelServer(t: After, gate?: Gate): Promise<Upstream> {
  const chunk = (content: string, finish: string | null = null) => {
    const choices = [{ index: 0, delta: { content }, finish_reason: finish }];
    const body = { id: 'chatcmpl-1', object: 'chat.completion.chunk', model: 'test-model', choices };
    return `data: ${JSON.stringify(body)}\n\n`;
  };
  return serve(t, {
    'GET /v1/models': (_req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model', owned_by: 'tests' }] }));
    },
    'POST /v1/chat/completions': async (req, res) => {
      const body = await readJsonBody(req);
      const words = ['Hello', ' from', ' the', ' model'];
      if (!body.stream) {
        const message = { role: 'assistant', content: words.join('') };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            model: body.model,
            choices: [{ index: 0, message, finish_reason: 'stop' }],
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(chunk(words[0] as string));
      await gate?.opened;
      for (const word of words.slice(1)) res.write(chunk(word));
      res.write(chunk('', 'stop'));
      res.end('data: [DONE]\n\n');
    },
    // Never answers: the request is held until the caller (the gateway's upstream timeout) gives up on it.
    'GET /slow': async (_req, res) => {
      await new Promise((resolve) => res.once('close', resolve));
    },
  });
}

export async function startAppServer(t: After): Promise<Upstream> {
  const up = await serve(t, {
    'GET /': (_req, res) => {
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end('<html><body><a href="dashboard">dashboard</a></body></html>');
    },
    'POST /session': (_req, res) => {
      res.writeHead(303, {
        location: '/dashboard',
        'set-cookie': [
          'sid=abc123; Path=/; HttpOnly',
          'pref=dark; Path=/settings; Domain=upstream.internal; SameSite=Lax',
        ],
      });
      res.end();
    },
    'GET /dashboard': (req, res) => {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ cookie: req.headers.cookie ?? null }));
    },
    'GET /absolute-redirect': (_req, res) => {
      res.writeHead(302, { location: `${up.url}/dashboard?from=abs` }).end();
    },
    'GET /external-redirect': (_req, res) => {
      res.writeHead(302, { location: 'https://example.org/elsewhere' }).end();
    },
    'GET /headers': (req, res) => {
      res.writeHead(200, {
        'content-type': 'application/json',
        connection: 'keep-alive, x-hop',
        'x-hop': 'secret',
        'keep-alive': 'timeout=5',
      });
      res.end(JSON.stringify(req.headers));
    },
  });
  const wss = new WebSocketServer({ noServer: true });
  up.server.on('upgrade', (req, socket, head) => {
    up.lastHeaders = req.headers;
    up.lastPath = req.url ?? null;
    if (!req.url?.startsWith('/ws')) {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data, binary) => ws.send(binary ? data : `echo:${String(data)}`));
    });
  });
  t.after(() => {
    for (const client of wss.clients) client.terminate();
    wss.close();
  });
  return up;
}

export async function startToolServer(t: After): Promise<Upstream> {
  return serve(t, {
    'POST /upload': async (req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const chunk of req) {
        hash.update(chunk as Buffer);
        bytes += (chunk as Buffer).length;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ bytes, sha256: hash.digest('hex') }));
    },
    'GET /bytes': (req, res) => {
      const total = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? 0);
      const block = Buffer.alloc(64 * 1024, 7);
      let sent = 0;
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
      const pump = () => {
        while (sent < total) {
          const piece = block.subarray(0, Math.min(block.length, total - sent));
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    },
    // Answers before reading the body, as a server refusing an oversized upload does.
    'POST /reject': (_req, res) => {
      res.writeHead(413, { 'content-type': 'application/json' }).end('{"error":"payload too large"}');
    },
    'POST /run': async (req, res) => {
      const body = await readJsonBody(req);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ tool: 'calculator', result: Number(body.a) + Number(body.b) }));
    },
  });
}

/**
 * A dead upstream without reserving a port (a port reserved then closed
 * may be taken by another run on the machine): nothing listens on
 * tcp/1 (tcpmux) on loopback, so connecting is refused at once.
 */
export const DEAD_UPSTREAM = 'http://127.0.0.1:1';

/** An upstream that accepts and drops every connection before answering. */
export async function startDroppingServer(t: After): Promise<string> {
  const server = createNetServer((socket) => socket.destroy());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Registers a deployment as the admin; returns the 201 record. */
export async function deploy(
  gw: TestGateway,
  body: Record<string, unknown>,
): Promise<{ id: string; runtime_path: string }> {
  const res = await gw.request('POST', '/api/serving/deployments', { token: await gw.adminToken(), json: body });
  if (res.status !== 201) throw new Error(`deploy failed: ${res.status} ${res.text}`);
  return res.json;
}

/**
 * An upstream that holds every `GET /held` until the test calls release()
 * (so a flood stays in flight for as long as the test needs) and answers
 * `GET /quick` at once. `held` counts requests being held now, `maxHeld` the most at once; releaseOne() answers
 * the oldest held one.
 */
export async function startHoldingServer(
  t: After,
): Promise<Upstream & { held: number; maxHeld: number; release(): void; releaseOne(): boolean }> {
  const waiting: ServerResponse[] = [];
  let released = false;
  const up = await serve(t, {
    'GET /held': (_req, res) => {
      if (released) return void res.end('held');
      holding.held += 1;
      holding.maxHeld = Math.max(holding.maxHeld, holding.held);
      waiting.push(res);
    },
    'GET /quick': (_req, res) => {
      res.end('quick');
    },
  });
  const holding = Object.assign(up, {
    held: 0,
    maxHeld: 0,
    release() {
      released = true;
      for (const res of waiting.splice(0)) res.end('held');
      holding.held = 0;
    },
    /** Answers the oldest held request, if there is one. */
    releaseOne() {
      const res = waiting.shift();
      if (!res) return false;
      res.end('held');
      holding.held -= 1;
      return true;
    },
  });
  return holding;
}

export interface LegacyRecord {
  id: string;
  kind: string;
  runtime_path: string;
  legacy_port: number | null;
  legacy_url: string | null;
}

/**
 * Creates a deployment on a random high port, retrying on a collision: the
 * port is bound by the gateway itself, never probed first by the test.
 */
export async function deployLegacy(gw: TestGateway, body: Record<string, unknown>): Promise<LegacyRecord> {
  const token = await gw.adminToken();
  for (let attempt = 0; attempt < 20; attempt++) {
    const legacy_port = 20000 + Math.floor(Math.random() * 40000);
    const res = await gw.request('POST', '/api/serving/deployments', { token, json: { ...body, legacy_port } });
    if (res.status === 409 && res.json.detail.reason === 'legacy_port_unavailable') continue;
    assert.equal(res.status, 201, res.text);
    return res.json;
  }
  throw new Error('no free legacy port in 20 attempts');
}

/**
 * A holding upstream (GET /held, GET /quick) that never closes an idle connection itself, counting the connections
 * requests came on: those open, and all it took.
 */
export async function startCountingServer(t: After) {
  const up = await startHoldingServer(t);
  // 0: no idle timeout (https://nodejs.org/api/http.html#serverkeepalivetimeout); only the gateway closes them.
  up.server.keepAliveTimeout = 0;
  // Connections that carried a request: the health probes' TCP connects (closed at once) are not the pool's.
  const counted = Object.assign(up, { open: 0, accepted: 0 });
  const seen = new WeakSet<Socket>();
  up.server.prependListener('request', ({ socket }: { socket: Socket }) => {
    if (seen.has(socket)) return;
    seen.add(socket);
    counted.accepted++;
    counted.open++;
    socket.once('close', () => counted.open--);
  });
  return counted;
}
