/**
 * Legacy per-deployment ports have one owner: a port can be bound by one
 * process only, and the primary is the one that outlives worker
 * replacements. A worker that creates or removes a deployment asks the
 * primary to open or close its port through the owner link, and gets the
 * primary's refusal (legacy_port_unavailable) as its own.
 */
import { hostOfUrl, urlOf } from '../../gateway/http/origin.ts';
import { type OwnerSide, ownerCall, type WorkerSide } from '../../gateway/process/link.ts';
import type { LegacyListeners } from './legacy.ts';
import type { LegacyPorts } from './service.ts';
import type { DeploymentRow } from './store.ts';

const OPEN = ownerCall<DeploymentRow, void>('serving.legacy.open');
const CLOSE = ownerCall<string, void>('serving.legacy.close');

/** In the primary: open and close ports on the workers' behalf. */
export function answerLegacyCalls(link: OwnerSide, listeners: LegacyListeners): void {
  link.answer(OPEN, (row) => listeners.open(row));
  link.answer(CLOSE, (id) => listeners.close(id));
}

/** In a worker: the primary's listeners, as the deployment service sees them. */
export class OwnedLegacyPorts implements LegacyPorts {
  constructor(
    private readonly link: WorkerSide,
    private readonly origin: () => string,
  ) {}

  open(row: DeploymentRow): Promise<void> {
    return this.link.ask(OPEN, row);
  }

  close(id: string): Promise<void> {
    return this.link.ask(CLOSE, id);
  }

  /** The port's URL; the primary opened every recorded port at its start, and refuses (no row) one it cannot bind. */
  url(row: DeploymentRow): string | null {
    return legacyUrl(row, this.origin);
  }
}

export function legacyUrl(row: DeploymentRow, origin: () => string): string | null {
  return row.legacyPort === null ? null : urlOf('https', hostOfUrl(origin()), row.legacyPort);
}
