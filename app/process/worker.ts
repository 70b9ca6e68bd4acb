/**
 * A worker process: waits for its configuration from the primary, serves
 * the shared ports with every domain in the `worker` role (once-only work is
 * the primary's), reports ready, and drains when told to. It never outlives
 * its primary: when the IPC pipe closes, node:cluster ends the worker at once (its own `disconnect` handler,
 * lib/internal/cluster/child.js), cutting what is in flight — there is no primary left to replace it anyway.
 */
import { WorkerLink } from '../../gateway/process/cluster-link.ts';
import { type Gateway, startGateway } from '../server.ts';
import { DRAIN_GRACE_MS, isSupervision, type ToPrimary, type ToWorker } from './messages.ts';
import { releaseStartupMemory } from './release-memory.ts';

/** Resolves with the exit code when the worker has stopped; the caller closes the IPC pipe, which keeps it alive. */
export async function runWorker(): Promise<number> {
  // The primary coordinates stopping and reloading: a terminal's SIGINT or SIGHUP reaches the whole process group,
  // and each worker leaves when the primary drains it. SIGTERM sent to a worker itself drains it (it is replaced).
  for (const name of ['SIGINT', 'SIGHUP'] as const) process.on(name, () => {});
  const link = new WorkerLink();
  const send = (message: ToPrimary) => process.send?.(message);
  const config = await new Promise<ToWorker & { supervise: 'start' }>((resolve) => {
    const onMessage = (message: unknown) => {
      if (isSupervision<ToWorker>(message) && message.supervise === 'start') {
        process.off('message', onMessage);
        resolve(message);
      }
    };
    process.on('message', onMessage);
  }).then((m) => m.config);
  let gateway: Gateway;
  try {
    gateway = await startGateway(config, { process: link, announce: () => {} });
  } catch (error) {
    send({ supervise: 'failed', message: error instanceof Error ? error.message : String(error) });
    return 1;
  }
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const stop = async (graceMs: number, reason: string) => {
      if (stopping) return;
      stopping = true;
      await gateway.close(graceMs, reason);
      resolve();
    };
    process.on('message', (message: unknown) => {
      if (isSupervision<ToWorker>(message) && message.supervise === 'drain') void stop(message.graceMs, 'drained');
    });
    process.once('SIGTERM', () => void stop(DRAIN_GRACE_MS, 'SIGTERM'));
  });
  send({ supervise: 'ready', httpsUrl: gateway.httpsUrl, httpUrl: gateway.httpUrl, origin: gateway.origin });
  releaseStartupMemory();
  await stopped;
  return 0;
}
