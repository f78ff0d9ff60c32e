import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Outcome } from '../auth/verification-outcome-recorder.js';
import { pgPool } from '../database/pg-pool.js';
import {
  outcomeBucketsSql,
  PRUNE_OUTCOME_DAYS_SQL,
  PRUNE_OUTCOME_HOURS_SQL,
  type OutcomeGranularity,
  type OutcomeSubject,
} from './verification-outcomes.sql.js';

/** One bucket as stored: its first instant and the requests per outcome. */
export type OutcomeBucketRow = { start: Date } & Record<Outcome, number>;

/**
 * Reads and prunes the verification outcomes (api_key_verification_hours and _days). They are
 * written by auth's VerificationOutcomeRecorder through the ApiKeyStore port
 * (ApiKeyVerificationStore.recordOutcomes); the SQL of both sides is in verification-outcomes.sql.ts.
 */
@Injectable()
export class VerificationOutcomeRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The buckets of one key or of all an org's keys, from `from` to `to` (UTC days, inclusive), oldest first. */
  buckets(
    granularity: OutcomeGranularity,
    subject: OutcomeSubject,
    id: string,
    from: string,
    to: string,
  ): Promise<OutcomeBucketRow[]> {
    return this.db.query<OutcomeBucketRow[]>(outcomeBucketsSql(granularity, subject), [id, from, to]);
  }

  /** Deletes at most `batch` hourly rows older than `before`; the rows deleted. */
  async pruneHours(before: Date, batch: number): Promise<number> {
    return (await pgPool(this.db).query(PRUNE_OUTCOME_HOURS_SQL, [before, batch])).rowCount ?? 0;
  }

  /** Deletes at most `batch` daily rows before the UTC day `before` (YYYY-MM-DD); the rows deleted. */
  async pruneDays(before: string, batch: number): Promise<number> {
    return (await pgPool(this.db).query(PRUNE_OUTCOME_DAYS_SQL, [before, batch])).rowCount ?? 0;
  }
}
