/**
 * The short-lived gRPC stream token of a job's `grpc` block: an
 * HMAC-SHA256-signed `{job, user, expiry}` bound to one job and its caller. Re-use within its lifetime is allowed so a client can resume
 * from a sequence number; a token for another job, tampered, or expired is
 * refused. The key is per gateway process: a restart retires old tokens,
 * and the job's status hands out a fresh one.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { RetrievalErrors } from './errors.ts';

interface Claims {
  j: string;
  u: string;
  e: number;
}

export class StreamTokens {
  readonly #key = randomBytes(32);

  constructor(
    private readonly ttlSeconds: number,
    private readonly now: () => Date,
  ) {}

  issue(jobId: string, userId: string): { token: string; expiresAt: Date } {
    const expiresAt = new Date(this.now().getTime() + this.ttlSeconds * 1000);
    const body = Buffer.from(JSON.stringify({ j: jobId, u: userId, e: Math.floor(expiresAt.getTime() / 1000) } satisfies Claims)).toString('base64url');
    return { token: `${body}.${this.#sign(body)}`, expiresAt };
  }

  /** The user the token was issued to, when it is valid for `jobId`. */
  verify(token: string, jobId: string): string {
    const invalid = (problem: string) => RetrievalErrors.make.grpc_token_invalid({ problem });
    const [body, signature, ...rest] = token.split('.');
    if (!body || !signature || rest.length > 0) throw invalid('malformed');
    const expected = Buffer.from(this.#sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid('signature');
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Claims;
    if (claims.j !== jobId) throw invalid('other_job');
    if (claims.e * 1000 <= this.now().getTime()) throw invalid('expired');
    return claims.u;
  }

  #sign(body: string): string {
    return createHmac('sha256', this.#key).update(body).digest('base64url');
  }
}
