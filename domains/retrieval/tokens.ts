/**
 * The short-lived stream token of a job's `grpc` block: an HMAC-SHA256-signed
 * `{job, user, protocol, expiry, nonce}` bound to one job, its caller and the
 * protocol it was handed out for. A `platform.retrieval.v1` token may be
 * re-used within its lifetime so a client can resume from a sequence number.
 * An Arrow Flight token is single-use: the first DoGet that presents it
 * claims it, and any later one is refused (the SDK's contract: no replay of
 * a handshake). A token for another job or protocol, tampered, or expired is
 * refused, and so is one whose user has been disabled or deleted since,
 * before a Flight token is spent. The key is kept with the cluster identity (cluster.ts), so a
 * token stays good across a restart until it expires, and a spent Flight
 * token stays spent: its nonce is kept in the database until then.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { RetrievalErrors } from './errors.ts';
import type { ReadRange } from './sources/types.ts';

export type StreamProtocol = 'arrow-flight' | 'platform.retrieval.v1';

interface Claims {
  j: string;
  u: string;
  p: StreamProtocol;
  e: number;
  n: string;
  /** An Arrow Flight endpoint's slice of the read (`[from, to]`); absent = the whole read. */
  r?: [number, number | null];
}

/** What a spent single-use token grants: its user, and the slice of the read it is for (null = all of it). */
export interface StreamGrant {
  readonly userId: string;
  readonly range: ReadRange | null;
}

/** The key (shared.ts) and where single-use nonces are spent (the database every process shares: cluster.ts). */
export interface TokenLedger {
  readonly tokenKey: Buffer;
  /** Spends a single-use token's nonce (kept until its expiry, in seconds); false when it was spent before. */
  spend(nonce: string, expiry: number): boolean;
}

export class StreamTokens {
  constructor(
    private readonly ttlSeconds: number,
    private readonly now: () => Date,
    private readonly ledger: TokenLedger,
    /** Whether a user is enabled and not deleted: a token is a credential of its user, refused as their others are. */
    private readonly userActive: (userId: string) => boolean,
  ) {}

  issue(
    jobId: string,
    userId: string,
    protocol: StreamProtocol,
    range: ReadRange | null = null,
  ): { token: string; expiresAt: Date } {
    const expiresAt = new Date(this.now().getTime() + this.ttlSeconds * 1000);
    const claims: Claims = {
      j: jobId,
      u: userId,
      p: protocol,
      e: Math.floor(expiresAt.getTime() / 1000),
      n: randomBytes(12).toString('base64url'),
      ...(range ? { r: [range.from, range.to] as [number, number | null] } : {}),
    };
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    return { token: `${body}.${this.#sign(body)}`, expiresAt };
  }

  /** The user a re-usable token was issued to, when it is valid for `jobId` and `protocol`. */
  verify(token: string, jobId: string, protocol: StreamProtocol): string {
    return this.#claims(token, jobId, protocol).u;
  }

  /** verify() for a single-use token, which it spends: the same token is refused from then on, in every process. */
  claim(token: string, jobId: string, protocol: StreamProtocol): StreamGrant {
    const claims = this.#claims(token, jobId, protocol);
    if (!this.ledger.spend(claims.n, claims.e))
      throw RetrievalErrors.make.grpc_token_invalid({ problem: 'already_used' });
    return { userId: claims.u, range: claims.r ? { from: claims.r[0], to: claims.r[1] } : null };
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
    if (!this.userActive(claims.u)) throw invalid('user_disabled');
    return claims;
  }

  #sign(body: string): string {
    return createHmac('sha256', this.ledger.tokenKey).update(body).digest('base64url');
  }
}
