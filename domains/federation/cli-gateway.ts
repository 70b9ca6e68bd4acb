/** The admin API of one gateway as the `meshgate federation` subcommands call it (a bearer token, its CA). */
import { Agent, request } from 'undici';

/** A step that failed with a message for the operator (exit 1), as opposed to a bug (thrown). */
export class StepFailed extends Error {}

/** An admin session against one gateway's API. */
export class Gateway {
  readonly #agent: Agent;
  constructor(
    readonly label: string,
    private readonly url: string,
    private readonly token: string,
    ca: string | undefined,
  ) {
    this.#agent = new Agent(ca ? { connect: { ca } } : {});
  }

  /** `path` below /api/cluster/federations, or from /api when it starts there. */
  async call(method: 'GET' | 'POST', path: string, json?: unknown): Promise<Record<string, any>> {
    const below = path.startsWith('/api/') ? path : `/api/cluster/federations${path}`;
    const res = await request(`${this.url.replace(/\/$/, '')}${below}`, {
      method,
      dispatcher: this.#agent,
      headers: {
        authorization: `Bearer ${this.token}`,
        ...(json === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: json === undefined ? null : JSON.stringify(json),
    }).catch((error: Error) => {
      throw new StepFailed(`${this.label}: ${method} ${path}: ${error.message}`);
    });
    const body = (await res.body.json().catch(() => ({}))) as Record<string, any>;
    if (res.statusCode >= 300) {
      const detail = body.detail;
      const reason =
        typeof detail === 'object' && detail && 'reason' in detail ? detail.reason : JSON.stringify(detail ?? body);
      throw new StepFailed(`${this.label}: ${method} ${path}: ${res.statusCode} ${reason}`);
    }
    return body;
  }

  close() {
    return this.#agent.close();
  }
}
