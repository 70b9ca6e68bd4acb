/**
 * The operator's own certificate and key (tlsCertFile, tlsKeyFile), read and checked before they reach the TLS
 * context, so a missing file, a file that is not PEM, a key of another certificate or an expired certificate is
 * one line naming the setting, not a raw errno or an OpenSSL error from deep inside the listener. `serve` stops on
 * the first such line; `meshgate validate` reports them with the rest.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** The link a Kubernetes secret or configMap volume replaces, in one rename, to publish new contents. */
const KUBERNETES_DATA_LINK = '..data';

export interface OperatorFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface CheckedFiles {
  /** What keeps the pair from being served. */
  readonly problems: string[];
  /** Why the pair, served, fails every client's check though it loads: it has expired. */
  readonly expired: string | null;
  readonly material: OperatorMaterial | null;
}

export interface OperatorMaterial {
  readonly certPem: string;
  readonly keyPem: string;
  readonly certificate: X509Certificate;
}

const CERT_SETTING = 'tlsCertFile (PLATFORM_TLS_CERT_FILE)';
const KEY_SETTING = 'tlsKeyFile (PLATFORM_TLS_KEY_FILE)';

/** The errno of a failed read as an operator reads it. */
function unreadable(file: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT'
      ? 'no such file'
      : code === 'EACCES'
        ? 'not readable by this user'
        : code === 'EISDIR'
          ? 'a folder, not a file'
          : (code ?? 'cannot be read');
  return `${file}: ${why}`;
}

function readText(setting: string, file: string, problems: string[]): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`${setting}: ${unreadable(file, error)}`);
    return null;
  }
}

/** Every problem with the pair (none: usable), and the material when it is. */
export function checkOperatorFiles(files: OperatorFiles, now = new Date()): CheckedFiles {
  const problems: string[] = [];
  const certPem = readText(CERT_SETTING, files.certFile, problems);
  const keyPem = readText(KEY_SETTING, files.keyFile, problems);
  let certificate: X509Certificate | null = null;
  let key: KeyObject | null = null;
  if (certPem !== null) {
    try {
      certificate = new X509Certificate(certPem);
    } catch {
      problems.push(`${CERT_SETTING}: ${files.certFile} holds no PEM certificate`);
    }
  }
  if (keyPem !== null) {
    try {
      key = createPrivateKey(keyPem);
    } catch {
      // The reason stays out: OpenSSL's text may quote part of what it read, and this file is a secret.
      problems.push(`${KEY_SETTING}: ${files.keyFile} holds no unencrypted PEM private key`);
    }
  }
  if (certificate && key && !certificate.checkPrivateKey(key)) {
    problems.push(`${KEY_SETTING}: ${files.keyFile} is not the key of the certificate in ${files.certFile}`);
  }
  const expired =
    certificate && new Date(certificate.validTo) <= now
      ? `${CERT_SETTING}: the certificate in ${files.certFile} expired on ${certificate.validTo}`
      : null;
  if (problems.length > 0 || certPem === null || keyPem === null || certificate === null) {
    return { problems, expired, material: null };
  }
  return { problems, expired, material: { certPem, keyPem, certificate } };
}

/**
 * The material, or an error whose message lists every problem. An expired certificate is served, and said through
 * `warn`: refusing to start would also take down what needs no certificate check (the admin listener, clients that
 * pin it), and a restart is when an operator is least able to fix it.
 */
export function readOperatorFiles(files: OperatorFiles, warn: (message: string) => void, now?: Date): OperatorMaterial {
  const { problems, expired, material } = checkOperatorFiles(files, now);
  if (material === null) throw new Error(problems.join('; '));
  if (expired !== null) warn(`${expired}: clients will refuse it; renew it`);
  return material;
}

/** However busy the folder, the files are read at most this long after the first change of a burst. */
const MAX_SETTLE_MS = 2000;

/**
 * Calls `onChange` with the pair each time the files change to a usable one, and `onProblem` with why a change is
 * not usable (yet: a renewal tool writing the certificate before the key), and `onWatchFailed` once when a folder
 * can no longer be watched (its watch refused; SIGHUP still rereads). The folders are watched, not the files: a
 * tool that writes a new file and renames it over the old one (certbot's deploy hooks) replaces the inode a file
 * watch would hold. Only events
 * for the two names count, and for `..data`, the symlink a Kubernetes secret volume swaps to publish new contents
 * (the files themselves are links through it, and see no event of their own). Events are gathered for `settleMs`,
 * but never more than two seconds from the first, before reading; `reread` reads at once (SIGHUP).
 */
export function watchOperatorFiles(
  files: OperatorFiles,
  onChange: (material: OperatorMaterial) => void,
  onProblem: (problems: string[]) => void,
  onWatchFailed: (dir: string, error: Error) => void,
  settleMs = 200,
): { reread(): void; close(): void } {
  let timer: NodeJS.Timeout | null = null;
  let burstStart = 0;
  let watchFailed = false;
  let last = `${readFileOrEmpty(files.certFile)}\n${readFileOrEmpty(files.keyFile)}`;
  const reread = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const { problems, material } = checkOperatorFiles(files);
    if (material === null) return onProblem(problems);
    const seen = `${material.certPem}\n${material.keyPem}`;
    if (seen === last) return;
    last = seen;
    onChange(material);
  };
  const watched = new Set([basename(files.certFile), basename(files.keyFile), KUBERNETES_DATA_LINK]);
  const changed = (_event: string, name: string | Buffer | null) => {
    // Some platforms give no name (fs.watch "filename argument"): then any change may be ours.
    if (name !== null && !watched.has(name.toString())) return;
    const now = Date.now();
    if (timer) clearTimeout(timer);
    else burstStart = now;
    timer = setTimeout(reread, Math.max(0, Math.min(settleMs, burstStart + MAX_SETTLE_MS - now)));
  };
  const watchers = [...new Set([dirname(files.certFile), dirname(files.keyFile)])].map((dir) =>
    watch(dir, { persistent: false }, changed).on('error', (error) => {
      if (watchFailed) return;
      watchFailed = true;
      onWatchFailed(dir, error);
    }),
  );
  return {
    reread,
    close() {
      if (timer) clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}

function readFileOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
