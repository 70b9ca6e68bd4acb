/**
 * The short-lived stream token of a job's `grpc` block: an HMAC-SHA256-signed
 * `{job, user, protocol, expiry, nonce}` bound to one job, its caller and the
 * protocol it was handed out for. A `platform.retrieval.v1` token may be
 * re-used within its lifetime so a client can resume from a sequence number.
 * An Arrow Flight token is single-use: the first DoGet that presents it
 * claims it, and any later one is refused (the SDK's contract: no replay of
 * a handshake). A token for another job or protocol, tampered, or expired is
 * refused. The key is per gateway start (one for all its processes): a
 * restart retires old tokens, and the job's status hands out a fresh one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { RetrievalErrors } from './errors.ts';
import type { SharedRuns } from './shared.ts';

export type StreamProtocol = 'arrow-flight' | 'platform.retrieval.v1';

interface Claims {
  j: string;
  u: string;
  p: StreamProtocol;
  e: number;
  n: string;
}

/** The key and the spent single-use nonces, shared by every process of the gateway (shared.ts). */
export type TokenLedger = Pick<SharedRuns, 'tokenKey' | 'spend'>;

export class StreamTokens {
  constructor(
    private readonly ttlSeconds: number,
    private readonly now: () => Date,
    private readonly ledger: TokenLedger,
  ) {}

  issue(jobId: string, userId: string, protocol: StreamProtocol): { token: string; expiresAt: Date } {
    const expiresAt = new Date(this.now().getTime() + this.ttlSeconds * 1000);
    const claims: Claims = {
      j: jobId,
      u: userId,
      p: protocol,
      e: Math.floor(expiresAt.getTime() / 1000),
      n: randomBytes(12).toString('base64url'),
    };
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return { token: `${body}.${this.#sign(body)}`, expiresAt };
  }

  /** The user a re-usable token was issued to, when it is valid for `jobId` and `protocol`. */
  verify(token: string, jobId: string, protocol: StreamProtocol): string {
    return this.#claims(token, jobId, protocol).u;
  }

  /** verify() for a single-use token, which it spends: the same token is refused from then on, in every process. */
  async claim(token: string, jobId: string, protocol: StreamProtocol): Promise<string> {
    const claims = this.#claims(token, jobId, protocol);
    if (!(await this.ledger.spend(claims.n, claims.e)))
      throw RetrievalErrors.make.grpc_token_invalid({ problem: 'already_used' });
    return claims.u;
  }

  #claims(token: string, jobId: string, protocol: StreamProtocol): Claims {
    const invalid = (problem: string) => RetrievalErrors.make.grpc_token_invalid({ problem });
    const [body, signature, ...rest] = token.split('.');
    if (!body || !signature || rest.length > 0) throw invalid('malformed');
    const expected = Buffer.from(this.#sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid('signature');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Claims;
    if (claims.j !== jobId) throw invalid('other_job');
    if (claims.p !== protocol) throw invalid('other_protocol');
    if (claims.e * 1000 <= this.now().getTime()) throw invalid('expired');
    return claims;
  }

  #sign(body: string): string {
    return createHmac('sha256', this.ledger.tokenKey).update(body).digest('base64url');
  }
}
