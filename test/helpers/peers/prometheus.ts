/**
 * Parses a /metrics answer with Prometheus's reference text parser
 * (`prometheus_client.parser`, scripts/peers/prometheus.sh), so a test
 * checks the exposition as Prometheus reads it rather than with a regex.
 */
import { execFile } from 'node:child_process';
import { peerScript } from './process.ts';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const PARSE = `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"name": s.name, "labels": s.labels, "value": s.value})
json.dump(out, sys.stdout)
`;

/** Every sample of the exposition; a malformed one makes the parser, and so the test, fail. */
export async function parsePrometheus(text: string): Promise<Sample[]> {
  const python = await peerScript('prometheus');
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', PARSE], { maxBuffer: 64 << 20 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`prometheus parser: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout) as Sample[]);
    });
    child.stdin?.end(text);
  });
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}
