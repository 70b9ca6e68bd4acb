/**
 * A cluster's identity on PostgreSQL: the files that make a gateway who it is — the platform CA and the server
 * certificate (tls/), the token signing keys, the federation PSK key and the catalog's KEKs (keys/, and the KEK
 * folder when it lies elsewhere) and the token issuer — kept in the shared database so every node is the same
 * gateway to its users and peers: any node verifies any node's tokens, serves any peer's signed mesh request, opens
 * any secret.
 *
 * Each file is sealed with AES-256-GCM under the node key (the path as associated data, so a sealed file cannot be
 * moved to another path), a key each node reads from its own file or environment and the database never holds: the
 * database alone, or a dump of it, opens nothing. A node starting takes the identity lock, writes the database's
 * files over its own (the cluster's identity wins), lets its domains start (the first node of a new cluster creates
 * the files then), and makes the database equal to its files again before releasing the lock; a file changed later
 * (`meshgate rotate-kek`) is published the same way and every node writes it on hearing of it (the change feed).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import type { SqlConnection } from '../db/connection.ts';

/** The feed topic of identity changes (the cluster_files trigger, data/migrations-pg). */
export const CLUSTER_FILES_TOPIC = 'cluster_files';
const IDENTITY_LOCK = 'meshgate.identity';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A folder of identity files, named in the database by `name` (its paths are `name/…`), or one file (`name`). */
export type IdentityRoot =
  | { readonly name: string; readonly dir: string }
  | { readonly name: string; readonly file: string };

export class NodeKeyMismatch extends Error {}

interface SealedRow {
  readonly path: string;
  readonly sealed: Buffer;
}

export class ClusterIdentity {
  constructor(
    private readonly sql: SqlConnection,
    private readonly nodeKey: Buffer,
    private readonly roots: readonly IdentityRoot[],
    /**
     * Database path prefixes whose files their own code publishes (publishUnder), each under its own lock: a start's
     * publish neither writes nor removes them, so a node starting while another node renews a certificate never
     * puts back the files it pulled before the renewal. pull() leaves them alone too: their code takes them when it
     * is ready for them (pullUnder, pullPaths), so a pull for another file, in whichever process, never writes an
     * older copy over what that code wrote and has not published yet.
     */
    private readonly managed: readonly string[] = [],
  ) {
    if (nodeKey.length !== 32) throw new Error('the node key must be 32 bytes');
  }

  /**
   * Takes the identity lock (waiting for a node starting meanwhile), then the cluster's files; the managed ones too
   * when `managed` (the process that runs their code, before it runs: nothing of it is unpublished yet).
   */
  begin({ managed = false }: { managed?: boolean } = {}): void {
    this.sql.prepare('SELECT pg_advisory_lock(hashtext(?))').get(IDENTITY_LOCK);
    try {
      this.pull();
      if (managed) for (const prefix of this.managed) this.pullUnder(prefix);
    } catch (error) {
      this.#unlock();
      throw error;
    }
  }

  /** Publishes this node's files (when its start succeeded) and releases the lock. */
  end(succeeded: boolean): void {
    try {
      if (succeeded) this.publish();
    } finally {
      this.#unlock();
    }
  }

  #unlock(): void {
    this.sql.prepare('SELECT pg_advisory_unlock(hashtext(?))').get(IDENTITY_LOCK);
  }

  /** Writes every file the database holds, but the managed ones, over this node's copy; returns how many differed. */
  pull(): number {
    const rows = this.sql.prepare('SELECT path, sealed FROM cluster_files').all() as SealedRow[];
    return this.#write(rows.filter(({ path }) => !this.#isManaged(path)));
  }

  /** Writes the files under `prefix` (a managed prefix or a folder inside one) over this node's copy. */
  pullUnder(prefix: string): number {
    this.#checkManaged([prefix]);
    const rows = this.sql
      .prepare('SELECT path, sealed FROM cluster_files WHERE substr(path, 1, ?) = ?')
      .all(prefix.length, prefix) as SealedRow[];
    return this.#write(rows);
  }

  /** Writes the named files (each under a managed prefix) over this node's copy; one the database lacks stays. */
  pullPaths(paths: readonly string[]): number {
    this.#checkManaged(paths);
    if (paths.length === 0) return 0;
    const rows = this.sql
      .prepare(`SELECT path, sealed FROM cluster_files WHERE path IN (${paths.map(() => '?').join(', ')})`)
      .all(...paths) as SealedRow[];
    return this.#write(rows);
  }

  /** The database's copy of one managed file, opened, without writing it anywhere; null when it holds none. */
  peek(path: string): Buffer | null {
    this.#checkManaged([path]);
    const sealed = this.sql.prepare('SELECT sealed FROM cluster_files WHERE path = ?').pluck().get(path) as
      | Buffer
      | undefined;
    return sealed === undefined ? null : this.#open(path, sealed);
  }

  #write(rows: readonly SealedRow[]): number {
    // Every row is checked and opened before the first write: a refused one leaves this node's files as they were.
    const changed = rows.flatMap(({ path, sealed }) => {
      const file = this.#fileOf(path);
      if (file === null) return [];
      const content = this.#open(path, sealed);
      return existsSync(file) && readFileSync(file).equals(content) ? [] : [{ file, content }];
    });
    for (const { file, content } of changed) {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      const staging = `${file}.${process.pid}.tmp`;
      // Created anew (O_EXCL): a link planted at the staging name is removed, never written through.
      rmSync(staging, { force: true });
      writeFileSync(staging, content, { mode: 0o600, flag: 'wx' });
      renameSync(staging, file);
    }
    return changed.length;
  }

  #isManaged(path: string): boolean {
    return this.managed.some((prefix) => path.startsWith(prefix));
  }

  #checkManaged(paths: readonly string[]): void {
    for (const path of paths) {
      if (!this.#isManaged(path)) throw new Error(`cluster identity: ${path} is not under a managed prefix`);
    }
  }

  /** Makes the database hold exactly this node's files (added, changed and removed ones), in one transaction. */
  publish(): void {
    this.#publishWhere((path) => !this.#isManaged(path));
  }

  /**
   * Makes the database hold this node's copy of exactly the named paths (each under a managed prefix): upserted
   * where it differs, removed where this node has no such file. Paths not named are left as they are. `fence` runs
   * first inside the transaction, on its connection: it throws to publish nothing (a lock no longer held).
   */
  publishPaths(paths: readonly string[], fence?: () => void): void {
    this.#checkManaged(paths);
    const named = new Set(paths);
    this.#publishWhere((path) => named.has(path), fence);
  }

  #publishWhere(included: (path: string) => boolean, fence?: () => void): void {
    const local = new Map(this.#localFiles().flatMap((f) => (included(f.path) ? [[f.path, f] as const] : [])));
    const rows = this.sql.prepare('SELECT path, digest FROM cluster_files').all() as { path: string; digest: string }[];
    const stored = new Map(rows.flatMap((row) => (included(row.path) ? [[row.path, row.digest] as const] : [])));
    const upsert = this.sql.prepare(
      'INSERT INTO cluster_files (path, sealed, digest, updated_at) VALUES (?, ?, ?, ?) ' +
        'ON CONFLICT (path) DO UPDATE SET sealed = excluded.sealed, digest = excluded.digest, ' +
        'updated_at = excluded.updated_at',
    );
    const remove = this.sql.prepare('DELETE FROM cluster_files WHERE path = ?');
    this.sql.transaction(() => {
      fence?.();
      const at = new Date().toISOString();
      for (const { path, content } of local.values()) {
        const digest = this.#digest(path, content);
        if (stored.get(path) !== digest) upsert.run(path, this.#seal(path, content), digest, at);
      }
      for (const path of stored.keys()) if (!local.has(path) && this.#fileOf(path) !== null) remove.run(path);
    })();
  }

  /** Every regular file under the roots, by its database path. */
  #localFiles(): { path: string; content: Buffer }[] {
    return this.roots.flatMap((root) => {
      if ('file' in root) return existsSync(root.file) ? [{ path: root.name, content: readFileSync(root.file) }] : [];
      const { name, dir } = root;
      if (!existsSync(dir)) return [];
      return (readdirSync(dir, { recursive: true }) as string[])
        .filter((entry) => !entry.endsWith('.tmp') && lstatSync(join(dir, entry)).isFile())
        .map((entry) => ({ path: [name, ...entry.split(sep)].join('/'), content: readFileSync(join(dir, entry)) }));
    });
  }

  /** The file a database path names under this node's roots; null for a root this node does not have. */
  #fileOf(path: string): string | null {
    const [name, ...rest] = path.split('/');
    const root = this.roots.find((r) => r.name === name);
    if (root && 'file' in root) return rest.length === 0 ? root.file : null;
    if (!root || rest.length === 0) return null;
    const file = join(root.dir, ...rest);
    // A path is data from the database: it must stay inside its root, also where a folder on the way is a link.
    if (outside(root.dir, file) || outside(realDir(root.dir), realDir(dirname(file)))) {
      throw new Error(`cluster identity: ${path} leaves its folder`);
    }
    return file;
  }

  /** Keyed by the node key too, so the digest column says nothing about a file to whoever reads the database. */
  #digest(path: string, content: Buffer): string {
    return createHash('sha256').update(this.nodeKey).update(path).update(content).digest('hex');
  }

  #seal(path: string, content: Buffer): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.nodeKey, iv).setAAD(Buffer.from(path));
    const data = Buffer.concat([cipher.update(content), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), data]);
  }

  #open(path: string, sealed: Buffer): Buffer {
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.nodeKey, sealed.subarray(0, IV_BYTES)).setAAD(
        Buffer.from(path),
      );
      decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch {
      throw new NodeKeyMismatch(
        'this node key does not open the cluster identity in the database: every node of a cluster needs the ' +
          'same node key (nodeKeyFile / PLATFORM_NODE_KEY_FILE)',
      );
    }
  }
}

function outside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel.startsWith('..') || isAbsolute(rel);
}

/** The real path of a folder's nearest existing ancestor, links resolved (the rest is created as plain folders). */
function realDir(dir: string): string {
  let existing = dir;
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  return join(realpathSync(existing), relative(existing, dir));
}

/** The node key from its file (32 bytes, base64 or raw) or PLATFORM_NODE_KEY's base64; never logged. */
export function readNodeKey(source: { file: string | null; base64: string | null }): Buffer {
  if (source.base64 !== null) return Buffer.from(source.base64, 'base64');
  if (source.file === null) {
    throw new Error(
      'a gateway on PostgreSQL needs the node key that seals the cluster identity: set nodeKeyFile ' +
        '(--node-key-file, PLATFORM_NODE_KEY_FILE) to a file of 32 random bytes, the same on every node',
    );
  }
  // The file's own mode, through a link: a mounted secret (Kubernetes) is a link to the key file.
  const stat = statSync(source.file);
  if ((stat.mode & 0o077) !== 0)
    throw new Error(`${source.file}: the node key file must be readable by its owner only`);
  const raw = readFileSync(source.file);
  return raw.length === 32 ? raw : Buffer.from(raw.toString('utf8').trim(), 'base64');
}
