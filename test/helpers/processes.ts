/** The process tree below a pid, read from /proc (stat: `pid (name) state ppid ...`; the name may hold spaces). */
import { readdirSync, readFileSync } from 'node:fs';

interface ProcessEntry {
  readonly pid: number;
  readonly name: string;
  readonly parent: number;
  readonly zombie: boolean;
}

function processes(): ProcessEntry[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const name = stat.slice(stat.indexOf('('), stat.lastIndexOf(')') + 1);
        return [{ pid: Number(entry), name, parent: Number(parent), zombie: state === 'Z' }];
      } catch {
        return []; // ended meanwhile
      }
    });
}

/** Every live process below `root`, each before its parent. */
export function descendants(root: number): { pid: number; name: string }[] {
  const all = processes();
  const below = (pid: number): ProcessEntry[] =>
    all.filter((p) => p.parent === pid).flatMap((child) => [...below(child.pid), child]);
  return below(root)
    .filter((p) => !p.zombie)
    .map(({ pid, name }) => ({ pid, name }));
}
