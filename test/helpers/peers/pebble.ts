/**
 * Pebble, Let's Encrypt's ACME test server (scripts/peers/pebble.sh), with pebble-challtestsrv answering its DNS
 * queries: every name resolves to 127.0.0.1 (A only), so Pebble validates HTTP-01 and TLS-ALPN-01 against the
 * gateway's ports on loopback, which the caller gives (`httpPort`, `tlsPort`). Validation attempts are not slept
 * on (PEBBLE_VA_NOSLEEP) and every order is validated afresh (PEBBLE_AUTHZREUSE=0). The directory's HTTPS
 * certificate chains to Pebble's test CA (`directoryCaFile`); what it issues chains to a root it makes at each
 * start, read from its management endpoint (`issuingRoot()`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import {
  type After,
  type PeerProcess,
  peerScript,
  peerWorkspace,
  randomPort,
  spawnPeer,
  withPortRetry,
} from './process.ts';

export interface PebbleOptions {
  /** The port Pebble fetches HTTP-01 tokens from, and the one it connects to for TLS-ALPN-01. */
  readonly httpPort: number;
  readonly tlsPort: number;
  /** Seconds a certificate of the `shortlived` profile is valid (default one day). */
  readonly shortLivedSeconds?: number;
  /**
   * External account binding (RFC 8555 §7.3.4) required, with these MAC keys by key id (base64url), as a CA that
   * binds ACME accounts to its customers' accounts does.
   */
  readonly externalAccountKeys?: Readonly<Record<string, string>>;
}

export interface Pebble {
  readonly directoryUrl: string;
  /** The PEM file the directory's HTTPS certificate is verified with. */
  readonly directoryCaFile: string;
  /** The root the issued certificates chain to (Pebble makes a new one at each start). */
  issuingRoot(): Promise<string>;
  /** Stops Pebble (the DNS server stays): "the CA went away". */
  stop(): Promise<void>;
  /** Starts Pebble again on the same ports. */
  restart(): Promise<void>;
}

export async function startPebble(t: After, options: PebbleOptions): Promise<Pebble> {
  const bin = await peerScript('pebble');
  const workspace = peerWorkspace(t, 'pebble');
  const directoryCaFile = join(bin, 'certs', 'pebble.minica.pem');
  const dns = await withPortRetry(async () => {
    const port = randomPort();
    const server = await spawnPeer(
      'pebble-challtestsrv',
      join(bin, 'pebble-challtestsrv'),
      [
        ...['-dnsserver', `127.0.0.1:${port}`, '-management', `127.0.0.1:${randomPort()}`],
        ...['-defaultIPv4', '127.0.0.1', '-defaultIPv6', ''],
        ...['-http01', '', '-https01', '', '-tlsalpn01', '', '-doh', ''],
      ],
      { ready: /Starting management server/, portInUse: /address already in use/ },
    );
    return { port, server };
  });
  t.after(() => dns.server.stop());
  let ports = { acme: 0, management: 0 };
  let pebble: PeerProcess | null = null;
  const start = async (fixed: typeof ports | null) => {
    pebble = await withPortRetry(
      async () => {
        ports = fixed ?? { acme: randomPort(), management: randomPort() };
        const config = join(workspace.dir, 'pebble-config.json');
        writeFileSync(config, JSON.stringify(pebbleConfig(bin, ports, options)));
        return workspace.adopt(
          await spawnPeer('pebble', join(bin, 'pebble'), ['-config', config, '-dnsserver', `127.0.0.1:${dns.port}`], {
            env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_AUTHZREUSE: '0' },
            ready: /ACME directory available at/,
            portInUse: /address already in use/,
          }),
        );
      },
      fixed ? 1 : 5,
    );
  };
  await start(null);
  const agent = new Agent({ ca: readFileSync(directoryCaFile, 'utf8') });
  return {
    directoryUrl: `https://127.0.0.1:${ports.acme}/dir`,
    directoryCaFile,
    issuingRoot: () => fetchText(`https://127.0.0.1:${ports.management}/roots/0`, agent),
    stop: async () => {
      await pebble?.stop();
    },
    restart: () => start(ports),
  };
}

function pebbleConfig(bin: string, ports: { acme: number; management: number }, options: PebbleOptions) {
  return {
    pebble: {
      listenAddress: `127.0.0.1:${ports.acme}`,
      managementListenAddress: `127.0.0.1:${ports.management}`,
      certificate: join(bin, 'certs', 'localhost', 'cert.pem'),
      privateKey: join(bin, 'certs', 'localhost', 'key.pem'),
      httpPort: options.httpPort,
      tlsPort: options.tlsPort,
      ocspResponderURL: '',
      externalAccountBindingRequired: options.externalAccountKeys !== undefined,
      ...(options.externalAccountKeys ? { externalAccountMACKeys: options.externalAccountKeys } : {}),
      retryAfter: { authz: 1, order: 1 },
      keyAlgorithm: 'ecdsa',
      profiles: {
        default: { description: 'ninety days', validityPeriod: 7_776_000 },
        shortlived: { description: 'for renewal tests', validityPeriod: options.shortLivedSeconds ?? 86_400 },
      },
    },
  };
}

function fetchText(url: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}
