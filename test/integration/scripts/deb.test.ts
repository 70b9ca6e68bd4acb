/**
 * The Debian package as an operator installs it (scripts/build.sh writes it beside the executable): its control
 * fields, files, modes and checksums; lintian and `systemd-analyze verify` on it; the unit's ExecStart= run from
 * the package unpacked into a scratch root, as systemd starts it; and dpkg installing, reinstalling over an
 * administrator's changes, removing and purging it in a scratch root, so the maintainer scripts run for real.
 * Everything is read from the package, not from the checkout's packaging/.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { get } from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { descendants } from '../../helpers/processes.ts';
import { serviceSettings, systemdWords } from '../../helpers/unit-file.ts';
import { waitFor } from '../../helpers/wait.ts';
import { workerPids } from '../../helpers/workers.ts';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const UNIT = 'usr/lib/systemd/system/meshgate.service';
const SETTINGS = 'etc/meshgate/meshgate.env';
/** systemd's PATH for services (systemd.exec(5), "Environment variables in spawned processes"). */
const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

let deb = '';
/** The package unpacked (dpkg-deb -x), and its control files (dpkg-deb -e); read only. */
let unpacked = '';
let control = '';
const scratchDirs: string[] = [];

function scratch(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `meshgate-deb-${prefix}-`));
  scratchDirs.push(dir);
  return dir;
}

before(() => {
  execFileSync('bash', [join(ROOT, 'scripts', 'build.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const packages = readdirSync(join(ROOT, 'dist')).filter((name) => /^meshgate_.*\.deb$/.test(name));
  assert.equal(packages.length, 1, `one package in dist/: ${packages.join(' ')}`);
  deb = join(ROOT, 'dist', packages[0] as string);
  unpacked = scratch('unpacked');
  control = join(scratch('control'), 'DEBIAN');
  execFileSync('dpkg-deb', ['-x', deb, unpacked]);
  execFileSync('dpkg-deb', ['-e', deb, control]);
});
after(() => {
  for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

function sha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** `command args…` to its end, whatever its exit code, with what it printed. */
function ran(command: string, args: string[], env?: NodeJS.ProcessEnv) {
  const { status, stdout, stderr } = spawnSync(command, args, { encoding: 'utf8', env, maxBuffer: 16 << 20 });
  return { status, stdout, stderr, output: `${stdout}${stderr}` };
}

test('control fields: a Debian version of package.json, this architecture, the libraries dpkg-shlibdeps found', () => {
  const field = (name: string) => execFileSync('dpkg-deb', ['-f', deb, name], { encoding: 'utf8' }).trim();
  const architecture = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  // A semver pre-release ("1.0.0-rc.1") sorts before its release only with a tilde (deb-version(5)).
  const version = VERSION.replace('-', '~');
  assert.equal(field('Package'), 'meshgate');
  assert.equal(field('Version'), version);
  assert.equal(field('Architecture'), architecture);
  assert.equal(basename(deb), `meshgate_${version}_${architecture}.deb`);
  assert.match(field('Maintainer'), /^[^<>]+ <[^<>@\s]+@[^<>@\s]+>$/);
  const depends = field('Depends').split(/,\s*/);
  assert.ok(depends.some((d) => /^libc6 \(>= [\d.]+\)$/.test(d)) && depends.some((d) => /^libstdc\+\+6 /.test(d)));
  assert.ok(depends.includes('systemd-sysusers | adduser'), field('Depends'));
  assert.equal(field('Recommends'), 'bubblewrap');
  const installedKiB = Number(field('Installed-Size'));
  assert.ok(installedKiB >= statSync(join(unpacked, 'usr/bin/meshgate')).size / 1024, `${installedKiB} KiB`);
});

test('files, owners and modes; the executable is the one tested; checksums hold; one conffile', () => {
  const listing = execFileSync('dpkg-deb', ['-c', deb], { encoding: 'utf8' }).trim().split('\n');
  const entries = listing.map((line) => {
    const words = line.split(/\s+/);
    return { mode: words[0] as string, owner: words[1] as string, path: words.at(-1) as string };
  });
  for (const { mode, owner, path } of entries) {
    assert.equal(owner, 'root/root', path);
    if (path.endsWith('/')) assert.equal(mode, 'drwxr-xr-x', path);
  }
  const files = entries.filter(({ path }) => !path.endsWith('/')).map(({ mode, path }) => [path, mode] as const);
  assert.deepEqual(
    new Map(files),
    new Map([
      ['./usr/bin/meshgate', '-rwxr-xr-x'],
      [`./${UNIT}`, '-rw-r--r--'],
      ['./usr/lib/sysusers.d/meshgate.conf', '-rw-r--r--'],
      // May hold secrets: not world-readable even before the postinst gives it the group meshgate.
      [`./${SETTINGS}`, '-rw-r-----'],
      ['./usr/share/doc/meshgate/copyright', '-rw-r--r--'],
      ['./usr/share/doc/meshgate/changelog.gz', '-rw-r--r--'],
      ['./usr/share/lintian/overrides/meshgate', '-rw-r--r--'],
    ]),
  );
  assert.equal(sha256(join(unpacked, 'usr/bin/meshgate')), sha256(join(ROOT, 'dist', 'meshgate')));

  assert.equal(readFileSync(join(control, 'conffiles'), 'utf8'), `/${SETTINGS}\n`);
  for (const script of ['postinst', 'prerm', 'postrm']) {
    assert.equal(statSync(join(control, script)).mode & 0o777, 0o755, script);
  }
  const sums = readFileSync(join(control, 'md5sums'), 'utf8').trim().split('\n');
  assert.equal(sums.length, files.length - 1, 'every file but the conffile');
  for (const line of sums) {
    const [sum, path] = line.split(/\s+/) as [string, string];
    assert.equal(
      createHash('md5')
        .update(readFileSync(join(unpacked, path)))
        .digest('hex'),
      sum,
      path,
    );
  }

  const unit = serviceSettings(readFileSync(join(unpacked, UNIT), 'utf8'));
  assert.deepEqual(unit.get('ExecStart')?.map(systemdWords), [['/usr/bin/meshgate', 'serve', '--workers', 'auto']]);
  assert.deepEqual(unit.get('EnvironmentFile'), [`-/${SETTINGS}`]);
});

test('the settings file sets nothing, and each example it gives is a setting `meshgate serve --help` lists', () => {
  const lines = readFileSync(join(unpacked, SETTINGS), 'utf8').split('\n');
  assert.deepEqual(
    lines.filter((line) => line.trim() !== '' && !line.startsWith('#')),
    [],
  );
  const examples = lines.flatMap((line) => /^#(PLATFORM_[A-Z0-9_]+)=/.exec(line)?.[1] ?? []);
  assert.ok(examples.length >= 5, examples.join(' '));
  const home = scratch('help');
  const help = execFileSync(join(unpacked, 'usr/bin/meshgate'), ['serve', '--help'], {
    encoding: 'utf8',
    env: { PATH: SYSTEMD_PATH, HOME: home, XDG_CACHE_HOME: join(home, 'cache') },
  });
  for (const name of examples) assert.ok(help.includes(name), `${name} in serve --help`);
});

test('lintian finds no error in the package (warnings are shown)', (t) => {
  const lintian = ran('lintian', ['--fail-on', 'error', deb]);
  const errors = lintian.output.split('\n').filter((line) => /^E: /.test(line));
  for (const line of lintian.output.split('\n').filter((l) => /^[WIP]: /.test(l))) t.diagnostic(line);
  assert.deepEqual(errors, []);
  assert.equal(lintian.status, 0, lintian.output);
});

/**
 * A root holding the package's unit and executable at their paths, what a Debian system with systemd has besides
 * (its units, /bin/kill for ExecReload=), and nothing else: `systemd-analyze verify --root` looks up every unit and
 * command there, so the executable's path, the targets and the commands are checked as on an installed system.
 */
function systemRoot(): string {
  const root = scratch('verify');
  cpSync('/usr/lib/systemd/system', join(root, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
  copyFileSync(join(unpacked, UNIT), join(root, UNIT));
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  linkSync(join(unpacked, 'usr/bin/meshgate'), join(root, 'usr/bin/meshgate'));
  copyFileSync('/usr/bin/kill', join(root, 'usr/bin/kill'));
  symlinkSync('usr/bin', join(root, 'bin'));
  return root;
}

test('systemd-analyze verify accepts the packaged unit', (t) => {
  const root = systemRoot();
  const verify = ran('systemd-analyze', ['verify', '--man=no', `--root=${root}`, `/${UNIT}`]);
  // verify exits 0 on settings it ignores (an unknown key, a bad value): any line naming the unit fails the test.
  // Lines about the host's own units are the machine's, shown only.
  const lines = verify.output.split('\n').filter((line) => line.trim() !== '');
  const ours = lines.filter((line) => line.includes('meshgate'));
  for (const line of lines.filter((l) => !ours.includes(l))) t.diagnostic(line);
  assert.deepEqual(ours, []);
  assert.equal(verify.status, 0, verify.output);

  // The check is real: a setting systemd would ignore is reported.
  writeFileSync(
    join(root, UNIT),
    readFileSync(join(unpacked, UNIT), 'utf8').replace('[Service]', '[Service]\nTyp=exec'),
  );
  assert.match(ran('systemd-analyze', ['verify', '--man=no', `--root=${root}`, `/${UNIT}`]).output, /Unknown key/);
});

function killTree(child: ChildProcess): void {
  for (const { pid } of [...descendants(child.pid as number), { pid: child.pid as number }]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // ended meanwhile
    }
  }
}

function ping(origin: string, ca: string): Promise<{ status: number | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    get(`${origin}/api/ping`, { ca }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    }).on('error', reject);
  });
}

test('the unit started from the unpacked package: workers, /api/ping over verified TLS, SIGTERM', async (t) => {
  // Its own copy of the package's files: the gateway writes its data and cache into this root.
  const root = scratch('serve');
  cpSync(unpacked, root, { recursive: true });
  const unit = serviceSettings(readFileSync(join(root, UNIT), 'utf8'));
  const sysusers = readFileSync(join(root, 'usr/lib/sysusers.d/meshgate.conf'), 'utf8');
  const home = systemdWords(sysusers.split('\n').find((line) => line.startsWith('u ')) ?? '')[4] as string;
  const rooted = (path: string) => (path.startsWith('/') ? join(root, path) : path);
  // What systemd gives the service (systemd.exec(5)): Environment=, the directories it makes, the user's home.
  const env: Record<string, string> = { PATH: SYSTEMD_PATH, HOME: rooted(home) };
  for (const word of (unit.get('Environment') ?? []).flatMap(systemdWords)) {
    const [name, value] = [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)];
    env[name] = value.startsWith('/var/') ? rooted(value) : value;
  }
  for (const [key, base, variable] of [
    ['StateDirectory', '/var/lib', 'STATE_DIRECTORY'],
    ['CacheDirectory', '/var/cache', 'CACHE_DIRECTORY'],
  ] as const) {
    const dir = rooted(`${base}/${unit.get(key)?.[0]}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    env[variable] = dir;
  }
  const dataDir = env.PLATFORM_DATA_DIR as string;
  assert.equal(dataDir, env.STATE_DIRECTORY, 'the data dir is the state directory');
  mkdirSync(env.HOME as string, { recursive: true, mode: 0o700 });

  const [exe, ...args] = systemdWords(unit.get('ExecStart')?.[0] ?? '');
  const child = spawn(rooted(exe as string), [...args, '--https-port', '0'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const closed = once(child, 'close');
    killTree(child);
    await closed;
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.on('data', (d) => {
    out += d;
  });
  const origin = await waitFor(() => /^meshgate origin (\S+)/m.exec(out)?.[1], { timeoutMs: 60_000, what: 'origin' });
  // `--workers auto`: one a core, each logging that it serves once it listens.
  const workers: number[] = await waitFor(
    () => {
      const serving = out.match(/"msg":"worker serving"/g)?.length;
      const pids = workerPids(child.pid as number);
      return serving === availableParallelism() && pids.length === serving ? pids : null;
    },
    { timeoutMs: 60_000, what: `${availableParallelism()} workers (--workers auto)` },
  );

  const ca = readFileSync(join(dataDir, 'tls', 'ca.pem'), 'utf8');
  const { status } = await ping(origin, ca);
  assert.equal(status, 200);
  // The executable unpacked its bundle into the unit's cache directory, not the data dir.
  assert.ok(readdirSync(env.CACHE_DIRECTORY as string).some((name) => name.startsWith(`${VERSION}-`)));
  assert.equal(statSync(dataDir).mode & 0o777, 0o700);

  const closed = once(child, 'close');
  child.kill('SIGTERM');
  const [code] = await closed;
  assert.equal(code, 0, out);
  assert.match(out, /meshgate stopped/);
  assert.deepEqual(
    workers.filter((pid) => existsSync(`/proc/${pid}`)),
    [],
    'the workers ended with it',
  );
});

/** Whether the path is there, a symlink not followed: the unit's links name paths in the root, not the host's. */
function linked(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** dpkg on a root of its own; the maintainer scripts run outside it with DPKG_ROOT set (dpkg(1), --root). */
function dpkgRoot() {
  const root = scratch('dpkg');
  for (const dir of ['var/lib/dpkg/info', 'var/lib/dpkg/updates', 'etc'])
    mkdirSync(join(root, dir), { recursive: true });
  writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  const dpkg = (...args: string[]) => {
    // The root's package database has no libc6 or systemd for the dependencies to name; the host's stand in.
    const result = ran('dpkg', [
      `--root=${root}`,
      '--force-script-chrootless',
      '--force-depends',
      '--log=/dev/null',
      ...args,
    ]);
    assert.equal(result.status, 0, `dpkg ${args.join(' ')}: ${result.output}`);
  };
  return { root, dpkg };
}

test("dpkg installs, reinstalls over the administrator's changes, removes and purges it", () => {
  const { root, dpkg } = dpkgRoot();
  const at = (path: string) => join(root, path);
  const wants = at('etc/systemd/system/multi-user.target.wants/meshgate.service');
  dpkg('--install', deb);

  const user = readFileSync(at('etc/passwd'), 'utf8')
    .split('\n')
    .find((line) => line.startsWith('meshgate:'));
  const [, , uid, gid, , home, shell] = (user ?? '').split(':');
  assert.equal(home, '/var/cache/meshgate', "the home is the cache dir: the data dir stays the gateway's own");
  assert.equal(shell, '/usr/sbin/nologin');
  assert.ok(Number(uid) > 0 && Number(uid) < 1000, `a system user: ${user}`);
  const settings = statSync(at(SETTINGS));
  assert.deepEqual([settings.uid, settings.gid, settings.mode & 0o777], [0, Number(gid), 0o640]);
  assert.equal(readlinkSync(wants), `/${UNIT}`, 'enabled: multi-user.target wants it');

  // Settings edited and left readable by everyone: a reinstall keeps the edit and takes the reading back.
  appendFileSync(at(SETTINGS), 'PLATFORM_LOG_LEVEL=warn\n');
  chmodSync(at(SETTINGS), 0o644);
  dpkg('--install', deb);
  const tightened = statSync(at(SETTINGS));
  assert.deepEqual([tightened.uid, tightened.gid, tightened.mode & 0o777], [0, Number(gid), 0o640]);

  // The administrator's own mode (dpkg-statoverride) and a disabled unit: a reinstall keeps both, and the edit.
  execFileSync('dpkg-statoverride', ['--root', root, '--update', '--add', 'root', 'root', '0600', `/${SETTINGS}`]);
  execFileSync('systemctl', [`--root=${root}`, '--quiet', 'disable', 'meshgate.service']);
  dpkg('--install', deb);
  assert.match(readFileSync(at(SETTINGS), 'utf8'), /^PLATFORM_LOG_LEVEL=warn$/m);
  const kept = statSync(at(SETTINGS));
  assert.deepEqual([kept.uid, kept.gid, kept.mode & 0o777], [0, 0, 0o600]);
  assert.equal(linked(wants), false, 'still disabled');
  assert.equal(
    readFileSync(at('etc/passwd'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('meshgate:')).length,
    1,
  );

  // What the gateway made while it ran: its data and its cache.
  for (const dir of ['var/lib/meshgate', 'var/cache/meshgate']) {
    mkdirSync(at(dir), { recursive: true });
    writeFileSync(at(`${dir}/file`), '');
  }
  dpkg('--remove', 'meshgate');
  assert.equal(existsSync(at('usr/bin/meshgate')), false);
  assert.ok(existsSync(at(SETTINGS)), 'remove keeps the settings');
  assert.equal(readlinkSync(at('etc/systemd/system/meshgate.service')), '/dev/null', 'masked while removed');

  dpkg('--purge', 'meshgate');
  assert.equal(existsSync(at(SETTINGS)), false);
  assert.equal(linked(at('etc/systemd/system/meshgate.service')), false, 'unmasked');
  assert.equal(existsSync(at('var/cache/meshgate')), false, 'purge deletes the cache');
  assert.ok(existsSync(at('var/lib/meshgate/file')), 'purge keeps the data');
});
