/** Waiting on a condition instead of a guessed sleep: polled every `intervalMs`, given up on after `timeoutMs`. */
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Names what was awaited, in the error thrown at the deadline. */
  what?: string;
}

export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 10_000, intervalMs = 10, what = 'condition' }: WaitOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
