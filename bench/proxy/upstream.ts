/**
 * The benchmark's upstream (a child process, so its CPU is not counted as
 * the proxy's): `GET /hello` answers 12 bytes with keep-alive; `GET
 * /stream?mb=N` streams N MiB in 64 KiB blocks with backpressure.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const block = Buffer.alloc(64 * 1024, 97);
const server = createServer((req, res) => {
  if (req.url?.startsWith('/stream')) {
    const total = Number(new URL(req.url, 'http://x').searchParams.get('mb') ?? 1) * 1024 * 1024;
    let sent = 0;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
    const pump = () => {
      while (sent < total) {
        sent += block.length;
        if (!res.write(block)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 12 });
  res.end('hello world\n');
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
