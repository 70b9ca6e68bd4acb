/**
 * The text of the PostgreSQL bridge's worker thread (bridge-worker.ts with node-postgres inside): prebuilt into the
 * bundle and the single executable by scripts/build.ts, built here with esbuild when run from a checkout.
 */
import { fileURLToPath } from 'node:url';

declare const MESHGATE_PG_BRIDGE: string | undefined;

let built: Promise<string> | null = null;

export function pgBridgeSource(): Promise<string> {
  if (typeof MESHGATE_PG_BRIDGE === 'string') return Promise.resolve(MESHGATE_PG_BRIDGE);
  built ??= buildPgBridge();
  return built;
}

/** One CommonJS script needing only Node's own modules; scripts/build.ts embeds the same text. */
export async function buildPgBridge(): Promise<string> {
  const esbuild = await import('esbuild');
  // esbuild's service is not stopped here: idle, it holds no process open, and stop() would also end the worker
  // thread that the TypeScript loader of a checkout (tsx) transforms through, to be started again by whichever module
  // loads next.
  const result = await esbuild.build({
    entryPoints: [fileURLToPath(new URL('./bridge-worker.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    write: false,
    logLevel: 'warning',
    // node-postgres loads its libpq binding only when asked for pg.native, which the bridge never is.
    external: ['pg-native'],
  });
  const [output] = result.outputFiles;
  if (!output) throw new Error('esbuild wrote no PostgreSQL bridge');
  return output.text;
}
