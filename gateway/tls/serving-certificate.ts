/**
 * The public listener's certificate as it changes while the gateway runs: a renewed ACME certificate, the
 * operator's files replaced on disk, SIGHUP. Each HTTPS server of this process is attached; a replacement goes
 * into every one's default TLS context (tls.Server#setSecureContext), which only handshakes begun after it use,
 * so open connections and their streams carry on with what they negotiated.
 *
 * It also answers TLS-ALPN-01 (RFC 8737): while an order is pending, a handshake that offers only `acme-tls/1`
 * for a name being validated is given that name's challenge certificate, and nothing else happens on it. ALPN is
 * selected before the certificate (OpenSSL's ClientHello processing), and Node calls both callbacks as methods of
 * the TLS socket (lib/_tls_wrap.js), so the certificate callback knows which protocol the socket chose.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { Server as NetServer } from 'node:net';
import { createSecureContext, type SecureContext, type TLSSocket, type TlsOptions } from 'node:tls';

export interface ServerKeyPair {
  readonly keyPem: string;
  readonly certPem: string;
}

/** RFC 8737 §6.2: the protocol name a TLS-ALPN-01 validation offers, alone. */
export const ACME_TLS_ALPN = 'acme-tls/1';

/** The TLS server options that make a listener rotatable and able to answer TLS-ALPN-01. */
export type HandshakeOptions = Pick<TlsOptions, 'ALPNCallback' | 'SNICallback'>;

type SecureServer = NetServer & { setSecureContext(options: TlsOptions): void };
type ChallengeSocket = TLSSocket & { _meshgateAcmeAlpn?: boolean };

/** The pair checked: the certificate parses, the key is its key. */
export function checkKeyPair(pair: ServerKeyPair): X509Certificate {
  const certificate = new X509Certificate(pair.certPem);
  if (!certificate.checkPrivateKey(createPrivateKey(pair.keyPem))) {
    throw new Error('the private key is not the key of the certificate');
  }
  return certificate;
}

export class ServingCertificate {
  #pair: ServerKeyPair;
  #serial: string;
  readonly #servers = new Set<SecureServer>();
  readonly #challenges = new Map<string, SecureContext>();
  readonly #listeners = new Set<(pair: ServerKeyPair) => void>();

  constructor(pair: ServerKeyPair) {
    this.#pair = pair;
    this.#serial = new X509Certificate(pair.certPem).serialNumber;
  }

  get current(): ServerKeyPair {
    return this.#pair;
  }

  /** The serial number of the certificate new handshakes get (hex, as X509Certificate gives it). */
  get serial(): string {
    return this.#serial;
  }

  /**
   * Takes the pair for every attached server's next handshakes; a pair that is not one (key of another
   * certificate, not PEM) throws and changes nothing. Returns whether the certificate changed.
   */
  replace(pair: ServerKeyPair): boolean {
    const certificate = checkKeyPair(pair);
    if (pair.certPem === this.#pair.certPem && pair.keyPem === this.#pair.keyPem) return false;
    for (const server of this.#servers) server.setSecureContext(contextOptions(pair));
    this.#pair = pair;
    this.#serial = certificate.serialNumber;
    for (const listener of this.#listeners) listener(pair);
    return true;
  }

  /** Called after each replacement (e.g. to tell this process's workers). */
  onReplace(listener: (pair: ServerKeyPair) => void): void {
    this.#listeners.add(listener);
  }

  /** The server takes every later replacement, until it closes. */
  attach(server: SecureServer): void {
    this.#servers.add(server);
    server.once('close', () => this.#servers.delete(server));
  }

  /** The name's TLS-ALPN-01 answer while its authorization is pending; null removes it. */
  setChallenge(name: string, pair: ServerKeyPair | null): void {
    if (pair === null) this.#challenges.delete(name.toLowerCase());
    else this.#challenges.set(name.toLowerCase(), createSecureContext(contextOptions(pair)));
  }

  /**
   * ALPN: h2, then HTTP/1.1, as the HTTP/2 server would select by itself; `acme-tls/1` only when it is all the
   * client offers (RFC 8737 §3) and a challenge is pending for the name it asks for. Certificate: the challenge's
   * for that socket, the default context for every other.
   */
  readonly handshakeOptions: HandshakeOptions = handshakeOptions(this.#challenges);
}

function handshakeOptions(challenges: ReadonlyMap<string, SecureContext>): HandshakeOptions {
  return {
    ALPNCallback(this: ChallengeSocket, { servername, protocols }) {
      if (protocols.includes('h2')) return 'h2';
      if (protocols.includes('http/1.1')) return 'http/1.1';
      const pending =
        protocols.length === 1 && protocols[0] === ACME_TLS_ALPN && challenges.has(servername.toLowerCase());
      this._meshgateAcmeAlpn = pending;
      return pending ? ACME_TLS_ALPN : undefined;
    },
    SNICallback(this: ChallengeSocket, servername, callback) {
      callback(null, this._meshgateAcmeAlpn ? challenges.get(servername.toLowerCase()) : undefined);
    },
  };
}

/**
 * The TLS options of the public listener and of every context that replaces its own: setSecureContext takes the
 * protocol versions from the options it is given, not from the listener's (Node.js lib/_tls_wrap.js), so each
 * replacement must carry them again. No client certificate is asked for, so no CA is needed to verify one; without
 * `ca`, Node.js would load its ~140 public root certificates into each context for nothing.
 */
export const LISTENER_TLS_OPTIONS: Readonly<TlsOptions> = { ca: [], minVersion: 'TLSv1.2' };

function contextOptions(pair: ServerKeyPair): TlsOptions {
  return { ...LISTENER_TLS_OPTIONS, key: pair.keyPem, cert: pair.certPem };
}
