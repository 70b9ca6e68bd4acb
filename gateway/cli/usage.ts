/**
 * Usage errors of `meshgate` subcommands. A command throws UsageError (or
 * node:util parseArgs throws one of its ERR_PARSE_ARGS_* errors); main.ts
 * prints the message naming the flag, then the command's usage, and exits 2
 * — the exit status BSD sysexits and most Unix tools give a usage mistake.
 */
export class UsageError extends Error {}

export const USAGE_EXIT_CODE = 2;

/** parseArgs' own refusals: an unknown flag, a flag without its value, a stray argument. */
export function isUsageError(error: unknown): error is Error {
  if (error instanceof UsageError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** Throws a UsageError naming every required flag that has no value. */
export function requireFlags(values: Record<string, unknown>, names: readonly string[]): void {
  const missing = names.filter((name) => values[name] === undefined || values[name] === '');
  if (missing.length > 0) throw new UsageError(`missing ${missing.map((name) => `--${name}`).join(', ')}`);
}
