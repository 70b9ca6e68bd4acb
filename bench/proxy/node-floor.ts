/**
 * The floor of bench/proxy/workers.ts: the least a reverse proxy in Node.js can be — node:http's server, one undici
 * Pool per process to the upstream (the gateway's dispatch API and backpressure), the request's headers passed on
 * with X-Forwarded-For, the response's copied back — with no pipeline, authentication, access log, metrics or
 * database. Run with the gateway's memory settings and by Node.js itself (its type stripping: no TypeScript loader,
 * which would add ~11 MB to its RSS). What this costs a request, and how two processes of it scale against nginx, is
 * what Node.js itself allows any gateway written on it.
 *   args: <upstream origin> <port> <processes> [connections]; processes > 1 are children each holding a SO_REUSEPORT
 *   socket; connections bounds each process's upstream pool (default 256; the streams bench opens one a stream).
 */
import { fork } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { type Dispatcher, Pool } from 'undici';

const [upstream = '', port = '0', processes = '1', connections = '256'] = process.argv.slice(2);

class Pump implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | null = null;
  readonly res: ServerResponse;
  constructor(res: ServerResponse) {
    this.res = res;
  }
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
  }
  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: IncomingHttpHeaders): void {
    this.res.writeHead(status, headers);
  }
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (!this.res.write(chunk)) {
      controller.pause();
      this.res.once('drain', () => this.#controller?.resume());
    }
  }
  onResponseEnd(): void {
    this.res.end();
  }
  onResponseError(): void {
    this.res.destroy();
  }
}

function serve(): void {
  const pool = new Pool(upstream, { connections: Number(connections), pipelining: 1, keepAliveTimeout: 30_000 });
  const server = createServer((req, res) => {
    const headers = { ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '' };
    const method = req.method as Dispatcher.HttpMethod;
    const body = method === 'GET' || method === 'HEAD' ? null : req;
    pool.dispatch({ path: req.url ?? '/', method, headers, body }, new Pump(res));
  });
  server.keepAliveTimeout = 60_000;
  server.listen({ port: Number(port), host: '127.0.0.1', reusePort: true }, () => process.send?.({ port }));
}

if (processes === '1' || process.env.NODE_FLOOR_CHILD) serve();
else {
  let ready = 0;
  for (let i = 0; i < Number(processes); i++) {
    const worker = fork(process.argv[1] as string, process.argv.slice(2), {
      execArgv: process.execArgv,
      env: { ...process.env, NODE_FLOOR_CHILD: '1' },
    });
    worker.once('message', () => {
      if (++ready === Number(processes)) process.send?.({ port });
    });
    // A process that could not listen (or died) ends the floor, so the bench sees it rather than wait.
    worker.once('exit', () => process.exit(1));
  }
}
process.on('disconnect', () => process.exit(0));
