/**
 * An OTLP/HTTP traces receiver for one test: test/helpers/peers/otlp_receiver.py,
 * which decodes every export request with the OpenTelemetry protocol's own
 * message definitions (PyPI `opentelemetry-proto`, scripts/peers/otlp.sh) and
 * prints each span it received. A request that does not decode is answered 400
 * and recorded in `rejected`, so a test can assert the exporter spoke the
 * protocol. Stopped in t.after.
 */
import { join } from 'node:path';
import { waitFor } from '../wait.ts';
import { type After, peerScript, spawnPeer } from './process.ts';

export interface ReceivedSpan {
  /** The resource's attributes (`service.name`, `meshgate.cluster`, …). */
  resource: Record<string, unknown>;
  scope: string;
  name: string;
  /** Lowercase hex, as W3C Trace Context writes them. */
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  kind: 'SPAN_KIND_UNSPECIFIED' | 'SPAN_KIND_INTERNAL' | 'SPAN_KIND_SERVER' | 'SPAN_KIND_CLIENT';
  attributes: Record<string, unknown>;
  status: { code: 'STATUS_CODE_UNSET' | 'STATUS_CODE_OK' | 'STATUS_CODE_ERROR'; message: string };
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port>/v1/traces */
  url: string;
  /** Every span received so far, in order of arrival. */
  readonly spans: readonly ReceivedSpan[];
  /** The receiver's reasons for every export request it could not decode. */
  readonly rejected: readonly string[];
  /** Resolves with what `found` returns once it is defined (bounded wait). */
  until<T>(found: (spans: readonly ReceivedSpan[]) => T | undefined, timeoutMs?: number): Promise<T>;
}

export async function startOtlpReceiver(t: After): Promise<OtlpReceiver> {
  const python = await peerScript('otlp');
  const server = await spawnPeer('otlp receiver', python, [join(import.meta.dirname, 'otlp_receiver.py')], {
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
    ready: /listening on (http:\/\/127\.0\.0\.1:\d+\/v1\/traces)/,
  });
  t.after(() => server.stop());
  const url = server.output.match(/listening on (\S+)/)?.[1] as string;
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  // Spans can only arrive once the test has the URL, so nothing is printed before these listeners are on.
  const lines = (onLine: (line: string) => void) => {
    let pending = '';
    return (chunk: Buffer) => {
      const parts = (pending + chunk.toString('utf8')).split('\n');
      pending = parts.pop() ?? '';
      for (const line of parts) onLine(line);
    };
  };
  server.child.stdout?.on(
    'data',
    lines((line) => {
      if (line.startsWith('span ')) spans.push(JSON.parse(line.slice('span '.length)) as ReceivedSpan);
    }),
  );
  server.child.stderr?.on(
    'data',
    lines((line) => {
      if (line.startsWith('rejected: ')) rejected.push(line.slice('rejected: '.length));
    }),
  );
  return {
    url,
    spans,
    rejected,
    async until<T>(found: (spans: readonly ReceivedSpan[]) => T | undefined, timeoutMs = 20_000): Promise<T> {
      let result: T | undefined;
      await waitFor(
        () => {
          result = found(spans);
          return result !== undefined;
        },
        { timeoutMs, intervalMs: 25, what: 'the expected spans' },
      ).catch((error: Error) => {
        // The message is built at the deadline, with what had arrived by then.
        throw new Error(
          `${error.message}; received ${JSON.stringify(spans.map((s) => [s.resource['meshgate.cluster'], s.name]))}; ` +
            `rejected ${JSON.stringify(rejected)}`,
        );
      });
      return result as T;
    },
  };
}
