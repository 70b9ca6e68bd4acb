/**
 * Starts a real gateway in-process for a test: its own temp data dir, HTTPS
 * on port 0, TLS verified against the CA it generated (never disabled),
 * logs captured in memory so tests can scan them. Closed in t.after, and a
 * stop fails the test when the gateway left a connection, a timer or a child
 * process behind (test/helpers/leaks.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import { type Gateway, startGateway } from '../../app/server.ts';
import { loadConfig } from '../../gateway/config/load.ts';
import type { ConfigInput } from '../../gateway/config/schema.ts';
import { pgBridgeSource } from '../../gateway/db/postgres/bridge-source.ts';
import { testDatabaseSettings } from './engine.ts';
import { assertNothingLeft, ResourceScope } from './leaks.ts';
import { waitFor } from './wait.ts';

export const ADMIN_PASSWORD = 'admin-password-for-tests';

export interface After {
  after(fn: () => unknown): void;
}

export interface TestResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

export interface RequestOptions {
  token?: string | null;
  json?: unknown;
  form?: Record<string, string>;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

export class TestGateway {
  readonly logs: string[] = [];
  readonly announced: string[] = [];
  gateway!: Gateway;
  agent!: Agent;
  #adminToken: string | null = null;
  readonly #clients: Array<() => Promise<unknown>> = [];
  /** What the running gateway holds; null while stopped. */
  #scope: ResourceScope | null = null;
  /** Job runs a stop left running on purpose, handed to the next start to watch. */
  #outliving: ResourceScope | null = null;

  /** The port of the first start, kept across restart() so peers that stored this address still reach it. */
  #port = 0;

  constructor(
    readonly dataDir: string,
    readonly overrides: ConfigInput,
    readonly options: TestGatewayOptions = {},
  ) {}

  /** The access lines written so far (they leave in blocks, at least once a second). */
  accessLines(): Array<Record<string, unknown>> {
    return this.logs
      .join('')
      .split('\n')
      .filter((line) => line.includes('"msg":"request"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }

  /** The access line of the request `requestId`, once it has been written. */
  accessLine(requestId: string): Promise<Record<string, unknown>> {
    return waitFor(() => this.accessLines().find((line) => line.req_id === requestId), {
      what: `the access line of ${requestId}`,
    });
  }

  /** https://<first hostname>:<port>: the public origin. Requests connect to 127.0.0.1 with that name as SNI. */
  get url(): string {
    return this.gateway.origin;
  }

  /** The bound port (https://127.0.0.1:<port>). */
  get port(): number {
    return this.#port;
  }

  async start(): Promise<this> {
    const config = loadConfig({
      env: {},
      overrides: {
        dataDir: this.dataDir,
        httpsPort: this.#port,
        bind: '127.0.0.1',
        hostnames: ['localhost'],
        logLevel: 'info',
        bootstrapAdminPassword: ADMIN_PASSWORD,
        ...this.overrides,
      },
    });
    const logs = this.logs;
    const sink = new Writable({
      write(chunk, _enc, done) {
        logs.push(String(chunk));
        done();
      },
    });
    // A gateway on PostgreSQL runs its bridge from text built from the sources (esbuild) once per test process, built
    // here, outside the gateway's scope: esbuild's service process outlives the build by design, and the leak check
    // would count it against this gateway.
    if (config.database !== null) await pgBridgeSource();
    const scope = new ResourceScope();
    if (this.#outliving) scope.adoptChildren(this.#outliving);
    this.#outliving = null;
    this.gateway = await scope.run(() =>
      startGateway(config, {
        logDestination: sink,
        announce: (line) => this.announced.push(line),
        ...(this.options.now ? { now: this.options.now } : {}),
      }),
    );
    this.#scope = scope;
    this.#port = Number(new URL(this.gateway.httpsUrl).port);
    // Connect to the bound loopback address, verify the certificate for the first configured
    // hostname (SNI), so names like fed-a.test need no /etc/hosts entry.
    this.agent = new Agent({ connect: { ca: this.gateway.caPem, servername: config.hostnames[0] as string } });
    this.#adminToken = null;
    return this;
  }

  /**
   * Closes the gateway, then fails if it left anything open. `jobsOutlive`: job runs still going are meant to outlive
   * the gateway (the next start re-attaches them); they are checked when the next start's gateway stops.
   */
  async stop({ jobsOutlive = false }: { jobsOutlive?: boolean } = {}): Promise<void> {
    const scope = this.#scope;
    if (!scope) return;
    this.#scope = null;
    for (const close of this.#clients.splice(0)) await close();
    await this.agent.close();
    await scope.run(() => this.gateway.close(1000));
    await assertNothingLeft(scope, `the gateway on port ${this.#port}`, { keepChildren: jobsOutlive });
    if (jobsOutlive) this.#outliving = scope;
  }

  /**
   * A client the test started after this gateway (a browser) that would otherwise still hold connections, or run as
   * a child process, when the gateway's stop checks for leaks: closed first.
   */
  closeBeforeStop(close: () => Promise<unknown>): void {
    this.#clients.push(close);
  }

  /** A process restart: job runs outlive it, as they outlive a real one. */
  async restart(): Promise<void> {
    await this.stop({ jobsOutlive: true });
    await this.start();
  }

  request(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    return requestAt(this.agent, this.gateway.httpsUrl, method, path, options);
  }

  login(username: string, password: string): Promise<string> {
    return passwordLogin(this, username, password);
  }

  async adminToken(): Promise<string> {
    this.#adminToken ??= await this.login('admin', ADMIN_PASSWORD);
    return this.#adminToken;
  }

  /** Creates a local non-admin user through the directory and returns a token for it. */
  async userToken(
    username: string,
    options: { roles?: string[]; attributes?: Record<string, unknown> } = {},
  ): Promise<{ token: string; id: string }> {
    const { USER_DIRECTORY } = await import('../../domains/auth/index.ts');
    const users = this.gateway.deps.services.get(USER_DIRECTORY);
    const password = `${username}-password`;
    const user =
      users.resolve(username) ??
      (await users.create({ username, password, roles: options.roles ?? [], attributes: options.attributes ?? {} }));
    return { token: await this.login(username, password), id: user.id };
  }
}

export interface TestGatewayOptions {
  /** The gateway's injected clock (clock-skew tests). */
  now?: () => Date;
}

export async function startTestGateway(
  t: After,
  overrides: ConfigInput = {},
  options: TestGatewayOptions = {},
): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'meshgate-test-'));
  const gw = new TestGateway(dataDir, { ...(await testDatabaseSettings(dataDir)), ...overrides }, options);
  // Registered before start, so a gateway that fails to start leaves no data dir behind.
  t.after(async () => {
    try {
      await gw.stop();
    } catch (error) {
      // A failing after-hook skips the hooks behind it (the test's peers would stay up): the failure is raised from
      // a hook added now, which node:test runs after all the others.
      t.after(() => {
        throw error;
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
  return gw.start();
}

/** One request to `base` + `path` over `dispatcher`: the answer's text, and its JSON when it parses. */
export async function requestAt(
  dispatcher: Dispatcher,
  base: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.json);
  }
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  }
  const res = await undiciRequest(`${base}${path}`, { method: method as 'GET', headers, body, dispatcher });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** A password grant at the gateway `gw` answers for; the access token. */
export async function passwordLogin(
  gw: Pick<TestGateway, 'request'>,
  username: string,
  password: string,
): Promise<string> {
  const res = await gw.request('POST', '/api/auth/token', { form: { username, password, grant_type: 'password' } });
  if (res.status !== 200) throw new Error(`login ${username} failed: ${res.status} ${res.text}`);
  return res.json.access_token as string;
}
