/**
 * One upstream replica as its own process, so a test can `kill -9` it and start it again on the same port:
 * `node test/helpers/replica-server.ts <name> <port>` prints `listening <port>` once it listens.
 *
 * - `GET /who`: its name as a JSON string (every answer also carries it in `x-replica`).
 * - `POST /echo`: reads the body, answers its length; each body it read is logged to stdout as `received <n>`.
 * - `POST /drop`: reads the body, then drops the connection without answering (logged as `received <n>` too).
 * - `GET /sse?n=<chunks>&ms=<gap>`: a token stream, `n` events `gap` ms apart.
 * - `GET /status/<code>`: answers that status.
 */
import { createServer } from 'node:http';

const [name = 'replica', port = '0'] = process.argv.slice(2);

const server = createServer((req, res) => {
  res.setHeader('x-replica', name);
  const url = new URL(req.url ?? '/', 'http://replica');
  if (req.method === 'POST') {
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      length += chunk.length;
    });
    req.on('end', () => {
      process.stdout.write(`received ${length}\n`);
      if (url.pathname === '/drop') res.socket?.destroy();
      else res.end(String(length));
    });
    return;
  }
  if (url.pathname === '/sse') {
    const n = Number(url.searchParams.get('n') ?? 10);
    const gap = Number(url.searchParams.get('ms') ?? 10);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sent = 0;
    const timer = setInterval(() => {
      res.write(`data: {"token":${sent}}\n\n`);
      if (++sent === n) {
        clearInterval(timer);
        res.end('data: [DONE]\n\n');
      }
    }, gap);
    res.on('close', () => clearInterval(timer));
    return;
  }
  const status = /^\/status\/(\d{3})$/.exec(url.pathname);
  res.statusCode = status ? Number(status[1]) : 200;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(name));
});

server.listen(Number(port), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
});
