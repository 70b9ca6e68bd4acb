/**
 * The streams benchmark's upstream (a child process, its CPU not counted as a proxy's): an OpenAI-style token
 * stream. `GET /v1/stream?n=<chunks>&ms=<gap>` answers `text/event-stream`, `n` events `gap` ms apart, each
 * carrying the moment it was written (`performance.timeOrigin + performance.now()`, the same clock in every process
 * of the box) so the client can tell how long the chunk took to arrive. `GET /hello` answers at once. Every answer
 * names the replica (`x-replica`, its first argument). With a second argument it listens on that port, so a
 * benchmark can kill it and start it again where it was.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const [name = 'upstream', port = '0'] = process.argv.slice(2);
const now = () => performance.timeOrigin + performance.now();

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://upstream');
  if (url.pathname !== '/v1/stream') {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 12, 'x-replica': name });
    res.end('hello world\n');
    return;
  }
  const n = Number(url.searchParams.get('n') ?? 60);
  const gap = Number(url.searchParams.get('ms') ?? 50);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-replica': name });
  let sent = 0;
  const write = () => {
    res.write(`data: {"i":${sent},"at":${now()}}\n\n`);
    if (++sent === n) {
      clearInterval(timer);
      res.end('data: [DONE]\n\n');
    }
  };
  const timer = setInterval(write, gap);
  write();
  res.on('close', () => clearInterval(timer));
});
server.keepAliveTimeout = 60_000;
server.maxConnections = 100_000;
server.listen(Number(port), '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
