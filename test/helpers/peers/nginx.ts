/**
 * A real nginx (Debian `nginx`, scripts/install-system-deps.sh) for a test:
 * its own prefix, pid file and temp folders in a throwaway workspace, one
 * worker, listening on a random loopback port. The caller gives the
 * `http {}` body and puts the `listen` directive it is handed in its server.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type After, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

const NGINX = '/usr/sbin/nginx';

export interface NginxPeer {
  url: string;
  /** The workspace, for files the server block names (a CA file, ...). */
  dir: string;
  stop(): Promise<void>;
}

/**
 * `http` receives the workspace folder (already created) and the `listen` directive; it returns the directives inside
 * `http {}`.
 */
export async function startNginx(t: After, http: (dir: string, listen: string) => string): Promise<NginxPeer> {
  if (!existsSync(NGINX))
    throw new Error('test peer nginx: /usr/sbin/nginx is missing (scripts/install-system-deps.sh installs it)');
  const workspace = peerWorkspace(t, 'nginx', 'SIGQUIT');
  const { dir } = workspace;
  const temp = ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((name) => join(dir, name));
  for (const folder of temp) mkdirSync(folder);
  // nginx drops a worker's privileges to `nobody` when started as root, which could not read the workspace.
  const user = process.getuid?.() === 0 ? 'user root;' : '';
  const port = await withPortRetry(async () => {
    const candidate = randomPort();
    const conf = join(dir, 'nginx.conf');
    writeFileSync(
      conf,
      `${user} worker_processes 1; daemon off; master_process on; pid ${dir}/nginx.pid; error_log stderr notice;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${temp[0]}; ` +
        `proxy_temp_path ${temp[1]}; fastcgi_temp_path ${temp[2]}; ` +
        `uwsgi_temp_path ${temp[3]}; scgi_temp_path ${temp[4]};
${http(dir, `listen 127.0.0.1:${candidate};`)}
}
`,
    );
    workspace.adopt(
      await spawnPeer('nginx', NGINX, ['-p', dir, '-c', conf, '-e', 'stderr'], {
        ready: /start worker process/,
        portInUse: /Address already in use/,
        timeoutMs: 10_000,
      }),
    );
    return candidate;
  });
  return { url: `http://127.0.0.1:${port}`, dir, stop: () => workspace.stop() };
}
