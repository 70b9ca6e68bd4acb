/** V8's flags as the process was launched with them: what a flag set at run time goes back to. */

/**
 * The flag as given at launch, on the command line or in NODE_OPTIONS (V8 takes the last), else V8's default. V8
 * reads `-` or `--` before a name, `_` for `-` within it, and `--no-name` or `--noname` for false.
 */
export function launchFlag(
  name: string,
  v8Default: string,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): string {
  const given = [...nodeOptions.split(/\s+/), ...execArgv].filter((arg) => {
    const bare = /^--?([^=]+)/.exec(arg)?.[1]?.replaceAll('_', '-');
    return bare === name || bare === `no-${name}` || bare === `no${name}`;
  });
  return given.at(-1) ?? v8Default;
}
