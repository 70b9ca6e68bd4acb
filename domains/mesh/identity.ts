/**
 * Who a signed mesh request speaks for, by the federation's identity mode:
 *
 * - shared_idp (receiver-controlled): only the caller's own shared-realm
 *   token counts. Its issuer must be the record's and trusted here; roles
 *   the source asserted are dropped and X-KZ-Mesh-User-Attributes ignored;
 *   attributes come from the token's custom claims.
 * - peer_kc / grandfathered (source-trusted): the signed user id, roles and
 *   attributes are taken; with require_peer_jwt the token must also verify
 *   against the peer realm's JWKS (the peer gateway's /api/auth/jwks).
 */
import type { JWTPayload } from 'jose';
import type { MeshEnvelope } from '../../gateway/mesh/directory.ts';
import { MeshErrors } from '../../gateway/mesh/errors.ts';
import { customClaims } from '../auth/index.ts';
import type { FederationDirectory, FederationRecordView } from '../federation/index.ts';
import { type RealmVerifier, sharedJwksUrl, TokenFailed } from './jwks.ts';

export interface CallerIdentity {
  sub: string;
  roles: readonly string[];
  attributes: Readonly<Record<string, unknown>>;
}

export class IdentityResolver {
  readonly #jwksUrls = new Map<string, Promise<string>>();

  constructor(
    private readonly federations: FederationDirectory,
    private readonly verifier: RealmVerifier,
  ) {}

  async establish(record: FederationRecordView, envelope: MeshEnvelope): Promise<CallerIdentity> {
    return record.identity_mode === 'shared_idp'
      ? this.#sharedIdp(record, envelope)
      : this.#sourceTrusted(record, envelope);
  }

  async #sharedIdp(record: FederationRecordView, envelope: MeshEnvelope): Promise<CallerIdentity> {
    if (!record.brokering_enabled) throw MeshErrors.make.brokering_required_for_receiver_controlled();
    const issuer = record.shared_issuer_url;
    if (!issuer || !this.federations.isTrustedSharedIssuer(issuer)) throw MeshErrors.make.shared_idp_issuer_untrusted();
    if (!envelope.peerToken) throw MeshErrors.make.peer_jwt_required();
    const payload = await this.verifySharedToken(envelope.peerToken, issuer, record.shared_ca_pem);
    return { sub: String(payload.sub), roles: [], attributes: customClaims(payload) };
  }

  /** A shared-realm token, verified against the issuer's JWKS over TLS trusting `caPem` (system CAs when null). */
  async verifySharedToken(token: string, issuer: string, caPem: string | null): Promise<JWTPayload> {
    const dispatcher = this.verifier.dispatcherFor(caPem);
    // The CA is part of the realm: a token verified, or a JWKS location discovered, through another CA is not reused.
    // The issuer comes from the unverified token: spelled with trailing slashes it is still one realm, one entry.
    const bare = issuer.replace(/\/+$/, '');
    const realm = `${bare} ${this.verifier.trustTag(caPem)}`;
    return guarded(() =>
      this.verifier.verify(token, `shared ${realm}`, async () => ({
        issuer: bare,
        jwksUrl: await this.#jwksUrl(realm, bare, dispatcher),
        dispatcher,
      })),
    );
  }

  #jwksUrl(realm: string, issuer: string, dispatcher: Parameters<typeof sharedJwksUrl>[1]): Promise<string> {
    let url = this.#jwksUrls.get(realm);
    if (!url) {
      url = sharedJwksUrl(issuer, dispatcher);
      // A failed lookup is retried on the next request, not remembered.
      url.catch(() => this.#jwksUrls.delete(realm));
      this.#jwksUrls.set(realm, url);
    }
    return url;
  }

  async #sourceTrusted(record: FederationRecordView, envelope: MeshEnvelope): Promise<CallerIdentity> {
    if (record.require_peer_jwt) {
      if (!envelope.peerToken) throw MeshErrors.make.peer_jwt_required();
      const realmOf = () => {
        const agent = this.federations.peerAgent(record.id);
        if (!agent) throw MeshErrors.make.peer_jwks({ error: 'peer not reachable' });
        return { issuer: record.peer_kc_issuer_url, jwksUrl: `${agent.origin}/api/auth/jwks`, dispatcher: agent.agent };
      };
      const payload = await guarded(() =>
        this.verifier.verify(envelope.peerToken as string, `peer ${record.id}`, realmOf),
      );
      // The token must be the asserted user's own, not any token of that realm.
      if (payload.sub !== envelope.userId)
        throw MeshErrors.make.peer_jwt_validation_failed({ error: 'sub does not match the signed user id' });
    }
    return { sub: envelope.userId, roles: envelope.roles, attributes: parseAttributes(envelope.userAttributes) };
  }
}

async function guarded(verify: () => Promise<JWTPayload>): Promise<JWTPayload> {
  try {
    return await verify();
  } catch (error) {
    if (!(error instanceof TokenFailed)) throw error;
    if (error.failure.kind === 'jwks') throw MeshErrors.make.peer_jwks({ error: error.failure.error });
    throw MeshErrors.make.peer_jwt_validation_failed({ error: error.failure.error });
  }
}

/** The source's X-User-Attributes (signed); anything but a JSON object counts as none. */
function parseAttributes(raw: string | undefined): Record<string, unknown> {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
