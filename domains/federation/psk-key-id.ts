/**
 * The key id of a PSK: a name for it that lets the receiver of an unauthenticated `/remote/pair` pick the one WAITING
 * record the call can be for and check its signature alone, rather than try every WAITING record's PSK (one HMAC each,
 * for anyone who sends a request). HMAC-SHA256 under the PSK itself over a fixed label, 128 bits in hex, and no two
 * PSKs in use share one by chance.
 *
 * What it tells: whoever sees it (the receiver, and anyone who can read the pair call: the bootstrap TLS does not
 * verify the receiver's chain, so an active interceptor of that one call can) may test PSK guesses against it offline,
 * one fast HMAC each, exactly as against the call's signature, which that party sees too. So it is sent only in the
 * pair call, beside that signature, and never stored: the database keeps only its lookup digest, an HMAC under a key
 * of this gateway's PSK vault (psk-vault.ts), which the database alone cannot test a guess against.
 */
import { createHmac, type KeyObject } from 'node:crypto';

/** A label no canonical string of the mesh envelope (gateway/mesh/canonical.ts) can be equal to. */
const LABEL = 'meshgate psk key id v1';

/** The request header an initiator names its PSK's key id in (the pair call only). */
export const KEY_ID_HEADER = 'x-kz-mesh-key-id';

export function pskKeyId(psk: string | KeyObject): string {
  return createHmac('sha256', psk).update(LABEL, 'utf8').digest('hex').slice(0, 32);
}

export function isKeyId(value: string): boolean {
  return /^[0-9a-f]{32}$/.test(value);
}
