/**
 * A real HAProxy (Debian `haproxy`, scripts/install-system-deps.sh) for a test: master-worker mode in the
 * foreground, its config and admin socket in a throwaway workspace, listening on a random loopback port. The caller
 * gives the sections after `global`/`defaults` and puts the `bind` directive it is handed in its frontend; the
 * admin socket answers which servers HAProxy's health checks hold up.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { type After, peerWorkspace, randomPort, spawnPeer, withPortRetry } from './process.ts';

const HAPROXY = '/usr/sbin/haproxy';

/**
 * `srv_op_state` of `show servers state` (HAProxy management guide, "show servers state"): 2 is SRV_ST_RUNNING,
 * the state a server reaches once its health checks pass `rise` times.
 */
const RUNNING = '2';

export interface HaproxyPeer {
  port: number;
  /** The workspace, for files the config names (a CA file, ...). */
  dir: string;
  /** The servers of `backend` that HAProxy holds up (running), by name. */
  serversUp(backend: string): Promise<string[]>;
  stop(): Promise<void>;
}

/** `sections` receives the workspace folder (already created) and the `bind` directive; it returns the sections. */
export async function startHaproxy(t: After, sections: (dir: string, bind: string) => string): Promise<HaproxyPeer> {
  if (!existsSync(HAPROXY))
    throw new Error('test peer haproxy: /usr/sbin/haproxy is missing (scripts/install-system-deps.sh installs it)');
  const workspace = peerWorkspace(t, 'haproxy');
  const { dir } = workspace;
  const socket = join(dir, 'admin.sock');
  const port = await withPortRetry(async () => {
    const candidate = randomPort();
    const conf = join(dir, 'haproxy.cfg');
    writeFileSync(
      conf,
      `global
  stats socket ${socket} mode 600 level admin
defaults
  timeout connect 2s
  timeout client 30s
  timeout server 30s
${sections(dir, `bind 127.0.0.1:${candidate}`)}
`,
    );
    // -W: a master that reports "Loading success." once the worker runs; -db: in the foreground, logs on stderr.
    workspace.adopt(
      await spawnPeer('haproxy', HAPROXY, ['-W', '-db', '-f', conf], {
        ready: /Loading success\./,
        portInUse: /cannot bind socket \(Address already in use\)/,
        timeoutMs: 10_000,
      }),
    );
    return candidate;
  });
  return {
    port,
    dir,
    async serversUp(backend) {
      const lines = (await adminCommand(socket, `show servers state ${backend}`)).split('\n');
      // Rows after the version line and the `#` header: be_id be_name srv_id srv_name srv_addr srv_op_state ...
      return lines
        .map((line) => line.split(' '))
        .filter((fields) => fields.length > 5 && !fields[0]?.startsWith('#') && fields[5] === RUNNING)
        .map((fields) => fields[3] as string);
    },
    stop: () => workspace.stop(),
  };
}

/** One command on the admin socket; HAProxy answers and closes the connection. */
function adminCommand(path: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(path, () => socket.end(`${command}\n`));
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.once('end', () => resolve(answer));
    socket.once('error', reject);
  });
}
