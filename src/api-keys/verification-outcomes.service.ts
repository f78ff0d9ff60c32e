import { Injectable, NotFoundException } from '@nestjs/common';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { VERIFICATION_OUTCOMES, type Outcome } from '../auth/verification-outcome-recorder.js';
import { utcDay } from '../common/clock.js';
import { oldestKeptDay, resolveDayRange } from '../common/day-range.js';
import { ERRORS } from '../common/error-messages.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { Settings } from '../settings/settings.js';
import { ApiKeyRepository } from './api-key.repository.js';
import {
  HOURLY_RETENTION_DAYS,
  type Granularity,
  type OutcomeCountsDto,
  type VerificationOutcomesDto,
  type VerificationOutcomesQuery,
} from './dto/verification-outcomes.dto.js';
import { VerificationOutcomeRepository, type OutcomeBucketRow } from './verification-outcome.repository.js';
import type { OutcomeSubject } from './verification-outcomes.sql.js';

const DAY_MS = 86_400_000;

/** A checked request: its granularity and its UTC days, both included. */
interface OutcomeRange {
  granularity: Granularity;
  from: string;
  to: string;
}
const BATCH = 5000;
/** One run deletes at most this many batches per table; what is left waits for the next run. */
const MAX_BATCHES_PER_RUN = 200;

/**
 * What each key's requests were decided, per hour or day (counted by auth's
 * VerificationOutcomeRecorder), for the key's owner, the org's owners and admins, and the org's
 * summary over all its keys.
 */
@Injectable()
export class VerificationOutcomesService {
  constructor(
    private readonly outcomes: VerificationOutcomeRepository,
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  /** GET /api-keys/{keyID}/verifications: the caller's own key; anyone else's is a 404, as a missing one. */
  async ownKey(
    principal: Principal,
    keyId: string,
    query: VerificationOutcomesQuery,
  ): Promise<VerificationOutcomesDto> {
    const range = this.range(query);
    const key = await this.keys.findOwnership(keyId);
    if (!key || key.userId !== principal.userId) throw new NotFoundException(ERRORS.keyNotFound);
    return this.report('key_id', keyId, range);
  }

  /** GET /orgs/{org_id}/api-keys/{keyID}/verifications: owners and admins, any key of the org (another org's: 404). */
  async orgKey(
    principal: Principal,
    orgId: string,
    keyId: string,
    query: VerificationOutcomesQuery,
  ): Promise<VerificationOutcomesDto> {
    const range = this.range(query);
    await requireOrgAdmin(this.directory, principal, orgId);
    const key = await this.keys.findOwnership(keyId);
    if (!key || key.orgId !== orgId) throw new NotFoundException(ERRORS.keyNotFound);
    return this.report('key_id', keyId, range);
  }

  /** GET /orgs/{org_id}/verifications: owners and admins, summed over every key of the org. */
  async org(principal: Principal, orgId: string, query: VerificationOutcomesQuery): Promise<VerificationOutcomesDto> {
    const range = this.range(query);
    await requireOrgAdmin(this.directory, principal, orgId);
    return this.report('org_id', orgId, range);
  }

  /**
   * The periodic job `verification-outcomes-retention`: hourly rows older than
   * HOURLY_RETENTION_DAYS, daily rows older than usage history (`usageRetentionDays`), in
   * bounded batches; the rows deleted.
   */
  async prune(batch = BATCH, maxBatches = MAX_BATCHES_PER_RUN): Promise<number> {
    const now = this.settings.clock.now();
    const hoursBefore = new Date(now.getTime() - HOURLY_RETENTION_DAYS * DAY_MS);
    const daysBefore = oldestKeptDay(utcDay(now), this.settings.usageRetentionDays);
    let deleted = 0;
    for (const prune of [
      () => this.outcomes.pruneHours(hoursBefore, batch),
      () => this.outcomes.pruneDays(daysBefore, batch),
    ]) {
      for (let i = 0; i < maxBatches; i++) {
        const n = await prune();
        deleted += n;
        if (n < batch) break;
      }
    }
    return deleted;
  }

  /** The range asked for: the day rules of usage history, with the hourly rows' own retention for `hour`. */
  private range(query: VerificationOutcomesQuery): OutcomeRange {
    const granularity = query.granularity ?? 'day';
    const retention = granularity === 'hour' ? HOURLY_RETENTION_DAYS : this.settings.usageRetentionDays;
    return { granularity, ...resolveDayRange(query, utcDay(this.settings.clock.now()), retention) };
  }

  private async report(subject: OutcomeSubject, id: string, range: OutcomeRange): Promise<VerificationOutcomesDto> {
    const rows = await this.outcomes.buckets(range.granularity, subject, id, range.from, range.to);
    return { ...range, buckets: rows.map((row) => ({ start: row.start.toISOString(), outcomes: countsOf(row) })) };
  }
}

function countsOf(row: OutcomeBucketRow): OutcomeCountsDto {
  const counts = {} as Record<Outcome, number>;
  for (const outcome of VERIFICATION_OUTCOMES) counts[outcome] = row[outcome];
  return counts;
}
