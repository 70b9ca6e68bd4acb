/**
 * The cost of tailing the change feed: CPU of an idle process whose feed polls every 20 ms, against the same
 * process with the feed stopped (the peer, same run). Bounded: two windows of `--seconds` each.
 *
 *   node --import tsx bench/feed/idle.ts [--seconds 10]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { loadConfig } from '../../gateway/config/load.ts';
import { SqliteChangeFeed } from '../../gateway/db/change-feed.ts';
import { openDatabase } from '../../gateway/db/open.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' } } });
const seconds = Math.min(Number(values.seconds), 120);
const dir = mkdtempSync(join(tmpdir(), 'meshgate-bench-feed-'));
const { sqlite } = openDatabase(join(dir, 'meshgate.db'));
const feed = new SqliteChangeFeed(sqlite, loadConfig({ env: {} }).feed, pino({ level: 'silent' }));

async function cpuMicros(run: boolean): Promise<number> {
  if (run) feed.start();
  else feed.close();
  const before = process.cpuUsage();
  // A referenced timer keeps the loop alive while the (unref'ed) feed polls.
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const used = process.cpuUsage(before);
  feed.close();
  return used.user + used.system;
}

const idle = await cpuMicros(false);
const tailing = await cpuMicros(true);
const polls = feed.stats.idlePolls + feed.stats.reads;
const perPoll = (tailing - idle) / Math.max(polls, 1);
const pct = (micros: number) => ((micros / (seconds * 1e6)) * 100).toFixed(3);
console.log(`window ${seconds} s; polls ${polls} (${feed.stats.reads} reads)`);
console.log(`idle process, feed stopped (peer): ${pct(idle)} % of one core`);
console.log(`idle process, feed polling:        ${pct(tailing)} % of one core`);
console.log(`cost per poll: ${perPoll.toFixed(1)} µs`);
sqlite.close();
rmSync(dir, { recursive: true, force: true });
