/**
 * A cluster under test: N real `bin/meshgate serve` processes, each with its own data dir and loopback port, on one
 * PostgreSQL database with one node key (so one CA, one set of signing keys, one federation store), and a real
 * HAProxy in front of them — TLS passthrough (`mode tcp`), round robin, each node health-checked on
 * `GET /api/ready` over TLS that verifies the cluster CA. Clients verify the cluster CA too: every node presents the
 * same certificate, whichever one HAProxy picked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { freshPostgresDatabase, testNodeKeyFile } from './engine.ts';
import type { GatewayClient } from './federation.ts';
import { type After, passwordLogin, type RequestOptions, requestAt, type TestResponse } from './gateway.ts';
import { type HaproxyPeer, startHaproxy } from './peers/haproxy.ts';
import { ADMIN_PASSWORD, type Served, serve } from './workers.ts';

/** The cluster's deployment domain: every node is started with it, so their one certificate names it. */
export const CLUSTER_HOSTNAME = 'nodes.test';
export const BACKEND = 'nodes';

/**
 * An HTTPS address of the cluster (a node's, or HAProxy's): requests verify the cluster CA for its hostname
 * (CLUSTER_HOSTNAME, or the one a single gateway process was started with).
 */
export class ClusterEndpoint implements GatewayClient {
  readonly overrides: { hostnames: string[] };
  #agent: Agent;
  #adminToken: string | null = null;

  constructor(
    readonly port: number,
    readonly ca: string,
    readonly hostname = CLUSTER_HOSTNAME,
  ) {
    this.overrides = { hostnames: [hostname] };
    this.#agent = new Agent({ connect: { ca, servername: hostname } });
  }

  /** https://localhost:<port>: the loopback name is on the gateway's certificate too (the load clients use it). */
  get base(): string {
    return `https://localhost:${this.port}`;
  }

  request(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    return requestAt(this.#agent, `https://127.0.0.1:${this.port}`, method, path, options);
  }

  login(username: string, password: string): Promise<string> {
    return passwordLogin(this, username, password);
  }

  async adminToken(): Promise<string> {
    this.#adminToken ??= await this.login('admin', ADMIN_PASSWORD);
    return this.#adminToken;
  }

  /** Drops the pooled connections (a node's process ended, or a test wants fresh connections). */
  async reconnect(): Promise<void> {
    await this.#agent.close();
    this.#agent = new Agent({ connect: { ca: this.ca, servername: this.hostname } });
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

export interface ClusterSettings {
  database: string;
  nodeKeyFile: string;
}

/** `meshgate serve` for a node of the cluster; port 0 picks a free port (the first start). */
export function serveNode(dataDir: string, cluster: ClusterSettings, port: number): Promise<Served> {
  const args = ['--https-port', String(port), '--bind', '127.0.0.1', '--hostname', CLUSTER_HOSTNAME];
  return serve(dataDir, [...args, '--log-level', 'info'], {
    PLATFORM_DATABASE_URL: cluster.database,
    PLATFORM_NODE_KEY_FILE: cluster.nodeKeyFile,
    PLATFORM_BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    // Mesh peers paired in peer_kc mode (no shared realm), as the federation tests pair them.
    PLATFORM_ALLOW_UNTRUSTED_FEDERATION: 'true',
  });
}

export class ClusterNode {
  #served: Served;
  endpoint: ClusterEndpoint;

  constructor(
    readonly name: string,
    readonly dataDir: string,
    private readonly settings: ClusterSettings,
    served: Served,
    readonly port: number,
  ) {
    this.#served = served;
    this.endpoint = new ClusterEndpoint(port, served.ca);
  }

  get served(): Served {
    return this.#served;
  }

  /** SIGKILL: the process ends at once, with whatever it was serving. */
  async kill(): Promise<void> {
    await this.#served.stop('SIGKILL');
    await this.endpoint.reconnect();
  }

  /** Starts the node again on its data dir and port (HAProxy knows the node by its port). */
  async restart(): Promise<void> {
    this.#served = await serveNode(this.dataDir, this.settings, this.port);
  }

  async stop(): Promise<void> {
    await this.#served.stop('SIGTERM');
    await this.endpoint.close();
  }
}

export interface Cluster {
  settings: ClusterSettings;
  nodes: ClusterNode[];
  haproxy: HaproxyPeer;
  /** The cluster as its clients and mesh peers reach it: through HAProxy. */
  balanced: ClusterEndpoint;
  /** Resolves once HAProxy's health checks hold exactly the named nodes up. */
  untilUp(names: readonly string[], timeoutMs?: number): Promise<void>;
}

/** `count` nodes on a fresh database (the first alone, as a new cluster starts), then HAProxy in front. */
export async function startCluster(t: After, count: number): Promise<Cluster> {
  const settings = { database: await freshPostgresDatabase(), nodeKeyFile: testNodeKeyFile() };
  const start = async (index: number) => {
    const dataDir = mkdtempSync(join(tmpdir(), `meshgate-node${index}-`));
    let node: ClusterNode | undefined;
    // Whatever the node's process is when the test ends (a restart makes a new one), it is ended before its data dir
    // is removed, in one hook: node skips a test's later after hooks once one throws.
    t.after(async () => {
      await node?.served.stop('SIGKILL');
      await node?.endpoint.close();
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 3 });
    });
    const served = await serveNode(dataDir, settings, 0);
    node = new ClusterNode(`n${index}`, dataDir, settings, served, Number(new URL(served.base).port));
    return node;
  };
  const first = await start(1);
  const others = await Promise.all(Array.from({ length: count - 1 }, (_, i) => start(i + 2)));
  const nodes = [first, ...others];
  const haproxy = await startBalancer(t, nodes, first.served.ca);
  const balanced = new ClusterEndpoint(haproxy.port, first.served.ca);
  t.after(() => balanced.close());
  const untilUp = async (names: readonly string[], timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    const wanted = [...names].sort().join(',');
    for (;;) {
      const up = (await haproxy.serversUp(BACKEND)).sort().join(',');
      if (up === wanted) return;
      if (Date.now() > deadline) throw new Error(`HAProxy holds [${up}] up, not [${wanted}], after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };
  await untilUp(nodes.map((n) => n.name));
  return { settings, nodes, haproxy, balanced, untilUp };
}

/**
 * HAProxy in TLS passthrough: it never holds the cluster's key; its health checks speak TLS themselves, verify the
 * cluster CA and name (`verify required`, `check-sni`), and ask for readiness over HTTP/1.1. Checks every 100 ms,
 * down after 2 failures, up after 2 successes: a dead node leaves the rotation within a few hundred milliseconds.
 * `option redispatch` with `retries`: a connection refused by a dead node is tried on the next one.
 */
function startBalancer(t: After, nodes: readonly ClusterNode[], ca: string): Promise<HaproxyPeer> {
  return startHaproxy(t, (dir, bind) => {
    const caFile = join(dir, 'cluster-ca.pem');
    writeFileSync(caFile, ca);
    const check =
      `check inter 100ms fall 2 rise 2 check-ssl verify required ca-file ${caFile} ` +
      `check-sni ${CLUSTER_HOSTNAME} check-alpn http/1.1`;
    return `frontend cluster
  mode tcp
  ${bind}
  default_backend ${BACKEND}
backend ${BACKEND}
  mode tcp
  balance roundrobin
  option redispatch
  retries 3
  option httpchk
  http-check send meth GET uri /api/ready ver HTTP/1.1 hdr Host ${CLUSTER_HOSTNAME}
  http-check expect status 200
${nodes.map((node) => `  server ${node.name} 127.0.0.1:${node.port} ${check}`).join('\n')}
`;
  });
}
