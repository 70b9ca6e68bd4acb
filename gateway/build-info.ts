/**
 * What this gateway is: the package version, the commit it was built from and
 * the Node.js it runs on (`meshgate --version`). scripts/build.ts stamps the
 * commit into the bundle; code run from the sources (the tests) reports
 * `source` instead.
 */
import packageJson from '../package.json' with { type: 'json' };

/** Replaced by the bundler with the commit the build saw (`<sha>` or `<sha>-dirty`). */
declare const MESHGATE_COMMIT: string | undefined;

export const BUILD_INFO = {
  version: packageJson.version,
  commit: typeof MESHGATE_COMMIT === 'string' ? MESHGATE_COMMIT : 'source',
  node: process.versions.node,
} as const;

/** The line `meshgate --version` prints. */
export function versionLine(): string {
  return `meshgate ${BUILD_INFO.version} (commit ${BUILD_INFO.commit}, Node.js ${BUILD_INFO.node})`;
}
