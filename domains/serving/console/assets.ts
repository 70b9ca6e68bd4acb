/**
 * The operator console's static assets: the client (Preact + htm, no JSX
 * step) bundled by esbuild from ./client, kept in memory under content-hashed
 * names so they can be cached for a year (RFC 9111 §5.2.2.1 max-age with
 * `immutable`, RFC 8246) and a new build never meets a stale copy. Run from
 * the sources, the client is bundled on the first console request; the
 * gateway's own bundle (scripts/build.ts) carries it prebuilt, since neither
 * esbuild nor ./client ship inside it. Nothing here runs until a console page
 * is asked for: the gateway's start and the runtime proxy never pay for it.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface ConsoleAsset {
  /** The hashed file name, e.g. `console-3f2a….js`. */
  name: string;
  type: string;
  body: Buffer;
  gzip: Buffer;
}

export interface ConsoleBundle {
  script: ConsoleAsset;
  style: ConsoleAsset;
  byName: ReadonlyMap<string, ConsoleAsset>;
}

/** The client's built script and stylesheet, put in by scripts/build.ts; absent when run from the sources. */
declare const MESHGATE_CONSOLE_CLIENT: { js: string; css: string } | undefined;

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

function asset(stem: string, ext: string, body: Buffer): ConsoleAsset {
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
  return { name: `${stem}-${hash}${ext}`, type: TYPES[ext] as string, body, gzip: gzipSync(body, { level: 9 }) };
}

/** The client's script and stylesheet: one minified ES module and one stylesheet. esbuild is loaded only here. */
export async function buildConsoleClient(): Promise<{ js: string; css: string }> {
  const esbuild = await import('esbuild');
  const dir = join(import.meta.dirname, 'client');
  const result = await esbuild.build({
    entryPoints: [join(dir, 'main.ts'), join(dir, 'console.css')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022'],
    write: false,
    outdir: '/console',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const out = (ext: string) => Buffer.from(result.outputFiles.find((f) => f.path.endsWith(ext))?.contents ?? '');
  return { js: out('.js').toString('utf8'), css: out('.css').toString('utf8') };
}

export async function buildConsoleBundle(): Promise<ConsoleBundle> {
  const prebuilt = typeof MESHGATE_CONSOLE_CLIENT === 'object' ? MESHGATE_CONSOLE_CLIENT : undefined;
  const client = prebuilt ?? (await buildConsoleClient());
  const script = asset('console', '.js', Buffer.from(client.js));
  const style = asset('console', '.css', Buffer.from(client.css));
  return { script, style, byName: new Map([script, style].map((a) => [a.name, a])) };
}

/** One build per process, started by whichever console request comes first. */
export class ConsoleAssets {
  #bundle: Promise<ConsoleBundle> | null = null;

  bundle(): Promise<ConsoleBundle> {
    this.#bundle ??= buildConsoleBundle();
    return this.#bundle;
  }
}
