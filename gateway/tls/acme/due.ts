/**
 * What is stored and when it is due: whether the stored certificate may serve or stands for the configured order
 * (renewal.ts decides with these), when a certificate is renewed, how long a failed order waits.
 */
import type { X509Certificate } from 'node:crypto';
import { checkKeyPair, type ServerKeyPair } from '../serving-certificate.ts';
import { type AcmeStore, certificateNames } from './store.ts';

const MAX_BACKOFF_MS = 6 * 3_600_000;

/** The stored certificate, valid now, its key its own: null when there is none such (or it cannot be read). */
function validStored(store: AcmeStore, now: Date): { pair: ServerKeyPair; certificate: X509Certificate } | null {
  try {
    const stored = store.certificate();
    if (stored === null) return null;
    const certificate = checkKeyPair(stored);
    if (certificate.validToDate <= now || certificate.validFromDate > now) return null;
    return { pair: { certPem: stored.certPem, keyPem: stored.keyPem }, certificate };
  } catch {
    return null;
  }
}

export function sameNames(a: readonly string[], b: readonly string[]): boolean {
  const sorted = (names: readonly string[]) => [...new Set(names.map((n) => n.toLowerCase()))].sort().join(',');
  return sorted(a) === sorted(b);
}

/** The stored certificate, when it is for exactly `names`, from `directoryUrl`, valid, and its key matches. */
export function usableStored(
  store: AcmeStore,
  names: readonly string[],
  directoryUrl: string,
  now: Date,
): X509Certificate | null {
  const valid = validStored(store, now);
  if (valid === null || store.certificate()?.directoryUrl !== directoryUrl) return null;
  return sameNames(certificateNames(valid.certificate), names) ? valid.certificate : null;
}

/**
 * What to serve until an order succeeds: a stored certificate that is valid and covers `domain`, though it is for
 * other names or from another directory, rather than the platform CA's, which no browser trusts either.
 */
export function servableStored(store: AcmeStore, domain: string, now: Date): ServerKeyPair | null {
  const valid = validStored(store, now);
  return valid && certificateNames(valid.certificate).includes(domain.toLowerCase()) ? valid.pair : null;
}

/** Two thirds of the lifetime, less up to a thirtieth of it at random. */
export function dueAt(certificate: X509Certificate, random = Math.random()): Date {
  const from = certificate.validFromDate.getTime();
  const lifetime = certificate.validToDate.getTime() - from;
  return new Date(from + (lifetime * 2) / 3 - (lifetime / 30) * random);
}

/** The wait after the n-th failure in a row: doubling from the minimum, capped, and 0.8–1.2 of that at random. */
export function backoffMs(failures: number, minMs: number, random = Math.random()): number {
  const base = Math.min(MAX_BACKOFF_MS, minMs * 2 ** Math.max(0, failures - 1));
  return Math.round(base * (0.8 + 0.4 * random));
}
