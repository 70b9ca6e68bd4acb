/**
 * An S3-compatible server for one test: moto's standalone
 * server (PyPI `moto[server]`, cached virtualenv from scripts/peers/s3.sh) on
 * 127.0.0.1, port 0 (it prints the port it bound). Plain HTTP on loopback;
 * any access key is accepted, so the returned pair is simply what clients
 * should send. Use path-style addressing (forcePathStyle: true). Stopped in t.after.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { type After, peerScript, spawnPeer } from './process.ts';

export interface S3Peer {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Stops the server now (e.g. "the source goes away mid-stream"); t.after also calls it. */
  stop(): Promise<void>;
}

export async function startS3(t: After): Promise<S3Peer> {
  const motoServer = await peerScript('s3');
  const server = await spawnPeer('s3 (moto)', motoServer, ['-H', '127.0.0.1', '-p', '0'], {
    env: { ...process.env, PYTHONUNBUFFERED: '1', NO_COLOR: '1' },
    ready: /Running on (http:\/\/127\.0\.0\.1:\d+)/,
    timeoutMs: 30_000,
  });
  const stop = () => server.stop('SIGTERM', 5000);
  t.after(stop);
  const [, endpoint] = server.output.match(/Running on (http:\/\/127\.0\.0\.1:\d+)/) ?? [];
  return {
    endpoint: endpoint as string,
    region: 'us-east-1',
    accessKeyId: 'meshgate-test',
    secretAccessKey: 'meshgate-test-secret',
    stop,
  };
}

/** An AWS SDK client for the peer (path-style, its key pair), destroyed in t.after: to put test objects. */
export function s3ClientFor(peer: S3Peer, t: After): S3Client {
  const client = new S3Client({
    endpoint: peer.endpoint,
    region: peer.region,
    forcePathStyle: true,
    credentials: { accessKeyId: peer.accessKeyId, secretAccessKey: peer.secretAccessKey },
  });
  t.after(() => client.destroy());
  return client;
}
