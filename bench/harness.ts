/** What the in-process benches share: a `t` the test helpers accept, and a main that always cleans up after itself. */
const cleanups: (() => unknown)[] = [];

export const benchContext = { after: (fn: () => unknown) => void cleanups.push(fn) };

export function runBench(main: () => Promise<void>): void {
  main()
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    })
    .finally(async () => {
      for (const fn of cleanups.reverse()) await fn();
    });
}
