/**
 * Packs the single executable into a Debian package, dist/meshgate_<version>_<architecture>.deb (scripts/build.sh
 * runs it after building dist/meshgate, when the package is older than the executable or than packaging/):
 *
 *   /usr/bin/meshgate                         dist/meshgate (a package installs under /usr; /usr/local is the
 *                                             administrator's, Debian Policy 9.1.2)
 *   /usr/lib/systemd/system/meshgate.service  packaging/meshgate.service
 *   /usr/lib/sysusers.d/meshgate.conf         packaging/meshgate.sysusers: the user the postinst makes
 *   /etc/meshgate/meshgate.env                packaging/meshgate.env, a conffile: the settings, commented out
 *   /usr/share/doc/meshgate/                  copyright (with Node.js's licence and the bundled packages' notices)
 *                                             and changelog.gz, which Debian Policy 12.5 and 12.7 ask of a package
 *   /usr/share/lintian/overrides/meshgate     packaging/meshgate.lintian-overrides: what lintian(1) flags that a
 *                                             single executable is, each with why
 *
 * and the maintainer scripts in packaging/deb/. Built with dpkg-deb(1) alone: every file is root's
 * (--root-owner-group); the settings file gets its group from the postinst, once the group exists. Its
 * dependencies on shared libraries are what dpkg-shlibdeps(1) finds in the executable and the SQLite addon it
 * unpacks at start (dpkg-dev).
 *
 * Run by Node.js itself (type stripping), as scripts/build.ts is.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { sqliteAddonFile } from './sqlite-addon.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const PACKAGING = join(ROOT, 'packaging');
const NAME = 'meshgate';
const CONFFILE = '/etc/meshgate/meshgate.env';

/** Debian's names for Node.js's architectures (dpkg-architecture(1)); the executable is this Node.js. */
const DEBIAN_ARCHITECTURES: Readonly<Record<string, string>> = { x64: 'amd64', arm64: 'arm64' };

/**
 * package.json's semantic version as a Debian version (deb-version(5)): a pre-release sorts before its release in
 * semver and after it in dpkg unless its hyphen becomes a tilde ("1.0.0-rc.1" → "1.0.0~rc.1"); build metadata
 * keeps its plus. A native package, so no Debian revision.
 */
function debianVersion(version: string): string {
  const debian = version.replace('-', '~');
  if (!/^[0-9][A-Za-z0-9.+~]*$/.test(debian)) throw new Error(`package.json version ${version}: no Debian version`);
  return debian;
}

function run(command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  try {
    return execFileSync(command, args, { ...options, encoding: 'utf8', stdio: 'pipe' });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    process.stderr.write(`${stdout ?? ''}${stderr ?? ''}`);
    throw error;
  }
}

interface Commit {
  readonly sha: string;
  /** Its author, `Name <address>`. */
  readonly author: string;
  /** When it was committed: an RFC 5322 date, and seconds since the epoch. */
  readonly date: string;
  readonly epoch: string;
}

/** HEAD's commit, or none outside a git checkout. */
function headCommit(): Commit | null {
  try {
    const format = '--format=%H%n%an <%ae>%n%cD%n%ct';
    const out = execFileSync('git', ['-C', ROOT, 'log', '-1', format], { encoding: 'utf8', stdio: 'pipe' });
    const [sha, author, date, epoch] = out.trim().split('\n');
    return sha && author && date && epoch ? { sha, author, date, epoch } : null;
  } catch {
    return null;
  }
}

/**
 * The package's maintainer: DEBFULLNAME and DEBEMAIL, the variables Debian's own tools read (dch(1)), else the
 * author of the commit built.
 */
function maintainerOf(commit: Commit | null): string {
  const { DEBFULLNAME, DEBEMAIL } = process.env;
  if (DEBFULLNAME && DEBEMAIL) return `${DEBFULLNAME} <${DEBEMAIL}>`;
  if (commit) return commit.author;
  throw new Error('outside a git checkout, DEBFULLNAME and DEBEMAIL name the package maintainer');
}

/**
 * The Depends of the executable and the SQLite addon: dpkg-shlibdeps reads their ELF dependencies and the symbol
 * versions they use, and names the lowest package versions that provide them. It wants a debian/control to read,
 * which a staging folder of its own holds.
 */
function sharedLibraryDepends(staging: string, binaries: string[]): string {
  const work = join(staging, 'shlibdeps');
  mkdirSync(join(work, 'debian'), { recursive: true });
  writeFileSync(join(work, 'debian', 'control'), `Source: ${NAME}\n\nPackage: ${NAME}\nArchitecture: any\n`);
  const found = run('dpkg-shlibdeps', ['-O', ...binaries.map((file) => `-e${file}`)], { cwd: work });
  const depends = /^shlibs:Depends=(.+)$/m.exec(found)?.[1];
  if (!depends) throw new Error(`dpkg-shlibdeps named no dependencies: ${found}`);
  return depends;
}

/**
 * Paragraphs as a control field's continuation lines (deb-control(5)): each line indented by one space, an empty one
 * as " .", and wrapped within 80 columns (Debian Policy 3.4.2).
 */
function continuation(paragraphs: string[]): string {
  const wrapped = paragraphs.map((paragraph) => {
    const lines: string[] = [];
    for (const word of paragraph.split(/\s+/)) {
      const last = lines.length - 1;
      if (last >= 0 && `${lines[last]} ${word}`.length < 80) lines[last] = `${lines[last]} ${word}`;
      else lines.push(` ${word}`);
    }
    return lines.join('\n');
  });
  return wrapped.join('\n .\n');
}

/** Node.js's licence beside the Node.js the executable is made of (its npm tarball ships it), else where it is. */
function nodeLicence(): string {
  const file = join(dirname(process.execPath), '..', 'LICENSE');
  if (existsSync(file)) return readFileSync(file, 'utf8');
  return `See https://github.com/nodejs/node/blob/${process.version}/LICENSE\n`;
}

function copyright(version: string): string {
  const legal = readdirSync(DIST)
    .filter((name) => /^meshgate(-[A-Z0-9]+)?\.mjs\.LEGAL\.txt$/.test(name))
    .sort()
    .map((name) => readFileSync(join(DIST, name), 'utf8'));
  return [
    `meshgate ${version}`,
    '',
    'License: Apache-2.0. On Debian systems its full text is in /usr/share/common-licenses/Apache-2.0.',
    '',
    `/usr/bin/meshgate is a single executable application: it contains Node.js ${process.version}, whose licence`,
    'follows, and the npm packages bundled into the gateway, whose licence notices follow that.',
    '',
    '== Node.js ==',
    '',
    nodeLicence().trimEnd(),
    '',
    '== npm packages ==',
    '',
    ...legal.map((text) => text.trimEnd()),
    '',
  ].join('\n');
}

/** A Debian changelog (deb-changelog(5)) of one entry: this build. */
function changelog(version: string, maintainer: string, commit: Commit | null): string {
  const built = commit ? `Built from commit ${commit.sha}.` : 'Built outside a git checkout.';
  const date = commit?.date ?? new Date().toUTCString().replace('GMT', '+0000');
  return `${NAME} (${version}) unstable; urgency=medium\n\n  * ${built}\n\n -- ${maintainer}  ${date}\n`;
}

interface Entry {
  /** The file's path in the package, from its root. */
  readonly path: string;
  readonly mode: number;
  /** Its content, or a file hard-linked (else copied) in. */
  readonly from: { text: string | Buffer } | { file: string };
}

function place(root: string, entry: Entry): void {
  const target = join(root, entry.path);
  mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
  if ('text' in entry.from) writeFileSync(target, entry.from.text);
  else {
    try {
      linkSync(entry.from.file, target);
    } catch {
      copyFileSync(entry.from.file, target);
    }
  }
  chmodSync(target, entry.mode);
}

function md5sums(root: string, paths: string[]): string {
  const md5 = (path: string) =>
    createHash('md5')
      .update(readFileSync(join(root, path)))
      .digest('hex');
  return paths.map((path) => `${md5(path)}  ${path.slice(1)}\n`).join('');
}

interface PackageJson {
  readonly version: string;
  readonly description: string;
}

/** What the package installs. */
function payload(version: string, maintainer: string, commit: Commit | null): Entry[] {
  const packaged = (name: string) => ({ file: join(PACKAGING, name) });
  return [
    { path: '/usr/bin/meshgate', mode: 0o755, from: { file: join(DIST, NAME) } },
    { path: '/usr/lib/systemd/system/meshgate.service', mode: 0o644, from: packaged('meshgate.service') },
    { path: '/usr/lib/sysusers.d/meshgate.conf', mode: 0o644, from: packaged('meshgate.sysusers') },
    // 0640 from the start: no moment in which a file meant for secrets is readable by everyone.
    { path: CONFFILE, mode: 0o640, from: packaged('meshgate.env') },
    { path: '/usr/share/doc/meshgate/copyright', mode: 0o644, from: { text: copyright(version) } },
    {
      path: '/usr/share/doc/meshgate/changelog.gz',
      mode: 0o644,
      from: { text: gzipSync(changelog(version, maintainer, commit), { level: 9 }) },
    },
    { path: '/usr/share/lintian/overrides/meshgate', mode: 0o644, from: packaged('meshgate.lintian-overrides') },
  ];
}

/** The control file (deb-control(5)). */
function control(pkg: PackageJson, fields: Record<string, string>): string {
  const [synopsis] = pkg.description.split(': ');
  const description = continuation([
    pkg.description,
    'This package holds the gateway as a single executable (Node.js included), its systemd unit, and the system ' +
      'user it runs as.',
  ]);
  const lines = Object.entries(fields).map(([name, value]) => `${name}: ${value}`);
  return `${[...lines, `Description: ${synopsis}`, description].join('\n')}\n`;
}

function build(): void {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  const architecture = DEBIAN_ARCHITECTURES[process.arch];
  if (!architecture) throw new Error(`no Debian architecture for Node.js's ${process.arch}`);
  const version = debianVersion(pkg.version);
  const commit = headCommit();
  const maintainer = maintainerOf(commit);

  const staging = join(DIST, `deb.${process.pid}`);
  const root = join(staging, 'root');
  rmSync(staging, { recursive: true, force: true });
  try {
    const files = payload(version, maintainer, commit);
    for (const entry of files) place(root, entry);
    const installedKiB = files.reduce((sum, { path }) => sum + Math.ceil(statSync(join(root, path)).size / 1024), 0);
    const libraries = sharedLibraryDepends(staging, [join(DIST, NAME), sqliteAddonFile()]);
    const fields = {
      Package: NAME,
      Version: version,
      Architecture: architecture,
      Maintainer: maintainer,
      'Installed-Size': String(installedKiB),
      Depends: `${libraries}, systemd-sysusers | adduser`,
      // Local jobs run in a bubblewrap sandbox; without it the gateway serves and refuses jobs (docs/jobs.md).
      Recommends: 'bubblewrap',
      Section: 'net',
      Priority: 'optional',
    };
    const checked = files.map(({ path }) => path).filter((path) => path !== CONFFILE);
    const metadata: Entry[] = [
      { path: '/DEBIAN/control', mode: 0o644, from: { text: control(pkg, fields) } },
      { path: '/DEBIAN/conffiles', mode: 0o644, from: { text: `${CONFFILE}\n` } },
      { path: '/DEBIAN/md5sums', mode: 0o644, from: { text: md5sums(root, checked) } },
      ...['postinst', 'prerm', 'postrm'].map((name) => ({
        path: `/DEBIAN/${name}`,
        mode: 0o755,
        from: { file: join(PACKAGING, 'deb', name) },
      })),
    ];
    for (const entry of metadata) place(root, entry);

    const output = join(DIST, `${NAME}_${version}_${architecture}.deb`);
    const staged = join(staging, 'package.deb');
    // gzip: seconds for the ~116 MB executable where dpkg-deb's default xz takes over a minute. Not zstd, faster
    // still: dpkg reads it since 1.21.18, but lintian calls such a package malformed (Debian's archive takes gzip
    // and xz only).
    // SOURCE_DATE_EPOCH: the files' times are the commit's, not the build's.
    const env = { ...process.env, ...(commit ? { SOURCE_DATE_EPOCH: commit.epoch } : {}) };
    run('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', root, staged], { env });
    renameSync(staged, output);
    for (const name of readdirSync(DIST)) {
      if (name.startsWith(`${NAME}_`) && name.endsWith('.deb') && join(DIST, name) !== output) {
        rmSync(join(DIST, name));
      }
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

build();
