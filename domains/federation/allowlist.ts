/**
 * The receiver's brokered-user allowlist ("Allowlist entry" states): add (409 on repeat,
 * release 1.3.3), list, revoke (optionally cancelling the user's in-flight
 * jobs through the BROKERED_JOB_CANCELLER hook), restore (optionally with a
 * new recipe). Recipes are validated against the ReBAC model at add time.
 */
import { validationError } from '../../gateway/http/body.ts';
import { createServiceKey } from '../../gateway/services.ts';
import { type FederationContext, requireRecord } from './context.ts';
import { FederationErrors } from './errors.ts';
import { recipeProblems } from './recipe.ts';
import type { RecipeTuple } from './schema.ts';
import type { AllowlistRow } from './store.ts';
import { entryView } from './wire.ts';

/**
 * Provided by the jobs domain (issue: jobs) when it exists: marks a brokered
 * user's active jobs STOPPED, best effort, and says how many. Looked up at
 * revoke time, so module order does not matter.
 */
export interface BrokeredJobCanceller {
  cancelActiveJobs(input: { localUserId: string; federationId: string; externalId: string }): Promise<number> | number;
}

export const BROKERED_JOB_CANCELLER = createServiceKey<BrokeredJobCanceller>('brokered-job-canceller');

export class AllowlistService {
  constructor(private readonly ctx: FederationContext) {}

  add(federationId: string, input: { external_id: string; initial_tuples: RecipeTuple[] }) {
    this.liveRecord(federationId);
    const problems = recipeProblems(input.initial_tuples);
    if (problems.length > 0) throw validationError(problems);
    if (this.ctx.allowlist.get(federationId, input.external_id)) {
      throw FederationErrors.make.federation_user_exists({ external_id: input.external_id });
    }
    const at = this.ctx.now().toISOString();
    const row: AllowlistRow = {
      federationId,
      externalId: input.external_id,
      initialTuples: input.initial_tuples,
      autoProvisioned: false,
      localUserId: null,
      createdAt: at,
      updatedAt: at,
      disabledAt: null,
    };
    this.ctx.allowlist.insert(row);
    return entryView(row);
  }

  list(federationId: string) {
    requireRecord(this.ctx, federationId);
    return this.ctx.allowlist.list(federationId).map(entryView);
  }

  /** enabled → disabled: new mesh admission is refused with revoked_brokered_user. */
  async revoke(federationId: string, externalId: string, cancelInFlightJobs: boolean) {
    const entry = this.entry(federationId, externalId);
    const at = this.ctx.now().toISOString();
    const row = this.ctx.allowlist.update(federationId, externalId, {
      disabledAt: entry.disabledAt ?? at,
      updatedAt: at,
    });
    let cancelled = 0;
    if (cancelInFlightJobs && row.localUserId) {
      const canceller = this.ctx.services.find(BROKERED_JOB_CANCELLER);
      cancelled = canceller ? await this.cancelBestEffort(canceller, row) : 0;
    }
    return { ...entryView(row), cancelled_jobs: cancelled };
  }

  /** disabled → enabled; a supplied recipe replaces the stored one (validated the same way as at add). */
  restore(federationId: string, externalId: string, recipe: RecipeTuple[] | undefined) {
    this.liveRecord(federationId);
    this.entry(federationId, externalId);
    if (recipe) {
      const problems = recipeProblems(recipe);
      if (problems.length > 0) throw validationError(problems);
    }
    const row = this.ctx.allowlist.update(federationId, externalId, {
      disabledAt: null,
      updatedAt: this.ctx.now().toISOString(),
      ...(recipe ? { initialTuples: recipe } : {}),
    });
    return entryView(row);
  }

  private async cancelBestEffort(canceller: BrokeredJobCanceller, row: AllowlistRow): Promise<number> {
    try {
      return await canceller.cancelActiveJobs({
        localUserId: row.localUserId as string,
        federationId: row.federationId,
        externalId: row.externalId,
      });
    } catch (error) {
      this.ctx.logger.warn(
        { err: error, federation_id: row.federationId },
        'cancel_in_flight_jobs failed (best effort)',
      );
      return 0;
    }
  }

  private liveRecord(federationId: string) {
    const row = requireRecord(this.ctx, federationId);
    if (row.status === 'DELETED')
      throw FederationErrors.make.federation_state_conflict({ status: row.status, role: row.role });
    return row;
  }

  private entry(federationId: string, externalId: string): AllowlistRow {
    requireRecord(this.ctx, federationId);
    const entry = this.ctx.allowlist.get(federationId, externalId);
    if (!entry) throw FederationErrors.make.federation_user_not_found({ external_id: externalId });
    return entry;
  }
}
