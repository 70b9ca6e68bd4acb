/**
 * Live processes read from /proc: proc(5) stat is "pid (comm) state ppid pgrp ..."; comm may hold spaces and
 * parentheses, so the fields are split after the last ')'.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessEntry {
  readonly pid: number;
  readonly name: string;
  readonly parent: number;
  readonly group: number;
  readonly zombie: boolean;
}

/** Every process visible now (one that ends meanwhile is left out). */
export function processes(): ProcessEntry[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => {
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, parent, group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const name = stat.slice(stat.indexOf('('), stat.lastIndexOf(')') + 1);
        return [{ pid: Number(entry), name, parent: Number(parent), group: Number(group), zombie: state === 'Z' }];
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
