/**
 * A throwaway PostgreSQL cluster for one test: the Debian
 * server binaries (scripts/peers/postgres.sh), initdb into a temp dir, TCP on
 * 127.0.0.1 with a random port (retried when taken), password auth
 * (scram-sha-256) for a superuser, durability off for speed. PostgreSQL
 * refuses to run as root, so under root the cluster belongs to the Debian
 * `postgres` system user and both initdb and the server run with its uid.
 * With `ssl` the server offers TLS with the given certificate, and with
 * `sslOnly` pg_hba takes TCP connections over TLS only (the helper's own
 * psql then uses the Unix socket). Stopped and deleted in t.after.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type After, peerScript, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

const execFileAsync = promisify(execFile);

export interface PostgresPeer {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** postgresql://user:password@127.0.0.1:port/database */
  url: string;
  /** Folder of the server's binaries (psql, pg_dump ...), e.g. for a COPY reference in benchmarks. */
  binDir: string;
  /** The postmaster's pid (a benchmark reads the CPU of its process tree). */
  pid: number;
  /** Runs SQL through the real psql client; returns its unaligned, tuples-only output, trimmed. */
  psql(sql: string): Promise<string>;
  /** Fast shutdown now (e.g. "the source goes away mid-stream"); t.after also calls it. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** Extra server settings, e.g. { work_mem: '64MB' }. */
  settings?: Record<string, string>;
  /**
   * TLS: the server certificate (chain) and its key, copied into the cluster's folder (key 0600, owned by the server's
   * user).
   */
  ssl?: { certFile: string; keyFile: string };
  /** pg_hba accepts TCP connections over TLS only (`hostssl`); needs `ssl`. */
  sslOnly?: boolean;
}

export async function startPostgres(t: After, options: PostgresOptions = {}): Promise<PostgresPeer> {
  const binDir = await peerScript('postgres');
  const owner = process.getuid?.() === 0 ? systemUser('postgres') : undefined;
  const workspace = peerWorkspace(t, 'pg', 'SIGINT' /* PostgreSQL's fast shutdown */);
  const { dir, stop } = workspace;
  const user = 'meshgate';
  const password = randomBytes(18).toString('base64url');
  writeFileSync(join(dir, 'pwfile'), `${password}\n`, { mode: 0o600 });
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chownSync(join(dir, 'pwfile'), owner.uid, owner.gid);
  }
  const data = join(dir, 'data');
  const initdbArgs = [
    '-D',
    data,
    '-U',
    user,
    `--pwfile=${join(dir, 'pwfile')}`,
    '-A',
    'scram-sha-256',
    '-E',
    'UTF8',
    '--locale=C',
    '-N',
  ];
  await execFileAsync(join(binDir, 'initdb'), initdbArgs, { uid: owner?.uid, gid: owner?.gid }).catch((error) => {
    throw new Error(`test peer postgres: initdb failed: ${error.stderr || error.message}`);
  });
  if (options.sslOnly) {
    if (!options.ssl) throw new Error('test peer postgres: sslOnly needs ssl');
    writeFileSync(
      join(data, 'pg_hba.conf'),
      'local all all scram-sha-256\nhostssl all all 127.0.0.1/32 scram-sha-256\n',
    );
  }
  const settings: Record<string, string> = {
    ...(options.ssl ? serverTls(dir, options.ssl, owner) : {}),
    listen_addresses: '127.0.0.1',
    unix_socket_directories: dir,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    shared_buffers: '64MB',
    max_connections: '50',
    ...options.settings,
  };
  let postmaster = 0;
  const port = await withPortRetry(async () => {
    const candidate = randomPort();
    const args = [
      '-D',
      data,
      '-p',
      String(candidate),
      ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
    ];
    const server = workspace.adopt(
      await spawnPeer('postgres', join(binDir, 'postgres'), args, {
        uid: owner?.uid,
        gid: owner?.gid,
        ready: /database system is ready to accept connections/,
        portInUse: /could not bind IPv4 address .*Address already in use|could not create any TCP\/IP sockets/,
        timeoutMs: 20_000,
      }),
    );
    postmaster = server.child.pid as number;
    return candidate;
  });
  const host = '127.0.0.1';
  const database = 'postgres';
  const url = `postgresql://${user}:${encodeURIComponent(password)}@${host}:${port}/${database}`;
  const psqlHost = options.sslOnly ? dir : host; // the Unix socket: pg_hba takes TCP over TLS only
  const psql = async (sql: string) => {
    const args = [
      '-X',
      '-q',
      '-A',
      '-t',
      '-v',
      'ON_ERROR_STOP=1',
      '-h',
      psqlHost,
      '-p',
      String(port),
      '-U',
      user,
      '-d',
      database,
      '-c',
      sql,
    ];
    try {
      const env = { ...process.env, PGPASSWORD: password }; // not on the command line, where ps shows it
      const { stdout } = await execFileAsync(join(binDir, 'psql'), args, { env, maxBuffer: 64 << 20 });
      return stdout.trim();
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      throw new Error(`psql failed: ${e.stderr || e.message}`);
    }
  };
  return { host, port, user, password, database, url, binDir, pid: postmaster, psql, stop };
}

/** Server settings for TLS; PostgreSQL refuses a key file others may read, or one owned by another user but root. */
function serverTls(
  dir: string,
  ssl: { certFile: string; keyFile: string },
  owner: { uid: number; gid: number } | undefined,
): Record<string, string> {
  const cert = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  copyFileSync(ssl.certFile, cert);
  copyFileSync(ssl.keyFile, key);
  chmodSync(key, 0o600);
  if (owner) for (const file of [cert, key]) chownSync(file, owner.uid, owner.gid);
  return { ssl: 'on', ssl_cert_file: cert, ssl_key_file: key };
}

function systemUser(name: string): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line)
    throw new Error(
      `test peer postgres: running as root needs the '${name}' system user (installed with the postgresql package)`,
    );
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
