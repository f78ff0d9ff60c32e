import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { ApiKeyStore, KeyVerificationRow, OutcomeCounts, ScopeUse } from '../auth/api-key-store.js';
import { VERIFICATION_OUTCOMES } from '../auth/verification-outcome-recorder.js';
import { keyLimitsOf, type KeyLimitColumns } from '../budgets/key-limits.js';
import { Clock } from '../common/clock.js';
import type { Plan, Role } from '../common/roles.js';
import { pgPool } from '../database/pg-pool.js';
import { VERIFY_KEYS_ONLY_SQL, VERIFY_WITH_DIRECTORY_SQL } from './api-key.sql.js';
import { RECORD_SCOPE_USE_SQL, TOUCH_LAST_USED_SQL } from './key-use.sql.js';
import { RECORD_OUTCOMES_SQL } from './verification-outcomes.sql.js';

interface RawVerificationRow extends KeyLimitColumns {
  enabled: boolean;
  pending: boolean;
  metadata: Record<string, unknown> | null;
  id: string;
  lookup: string;
  key_hash: Buffer;
  previous_lookup: string | null;
  previous_key_hash: Buffer | null;
  previous_expires_at: Date | null;
  user_id: string;
  org_id: string;
  scopes: string[];
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  email: string | null;
  role: Role | null;
  plan: Plan | null;
  user_kind: string | null;
  member_count: number | null;
  asks: number | null;
  retrieves: number | null;
  imports: number | null;
  captures: number | null;
}

const toVerificationRow = (r: RawVerificationRow): KeyVerificationRow => ({
  id: r.id,
  lookup: r.lookup,
  keyHash: r.key_hash,
  previousLookup: r.previous_lookup,
  previousKeyHash: r.previous_key_hash,
  previousExpiresAt: r.previous_expires_at,
  userId: r.user_id,
  orgId: r.org_id,
  scopes: r.scopes,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  lastUsedAt: r.last_used_at,
  enabled: r.enabled,
  pending: r.pending,
  limits: keyLimitsOf(r),
  metadata: r.metadata,
  email: r.email,
  role: r.role,
  plan: r.plan,
  memberCount: Number(r.member_count ?? 0),
  service: r.user_kind === 'service',
  usage: { asks: r.asks ?? 0, retrieves: r.retrieves ?? 0, imports: r.imports ?? 0, captures: r.captures ?? 0 },
});

/**
 * Auth's ApiKeyStore port over api_keys: the verification read and the write-behinds (last use,
 * scope use, verification outcomes).
 * The hot path of every request with a key, so it alone runs named (prepared) statements on the
 * driver's pool instead of DataSource.query: parsed and planned once per connection, measured
 * several times faster than TypeORM's entity path per request (see bench/).
 */
@Injectable()
export class ApiKeyVerificationStore implements ApiKeyStore {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  /** A rotated-out secret is returned (and matched by its lookup and hash) only while its grace runs. */
  async findForVerification(
    lookups: string[],
    hashes: Buffer[],
    withDirectory: boolean,
    day: string,
  ): Promise<KeyVerificationRow[]> {
    const result = await pgPool(this.db).query<RawVerificationRow>({
      name: withDirectory ? 'kui_verify_keys_dir' : 'kui_verify_keys',
      text: withDirectory ? VERIFY_WITH_DIRECTORY_SQL : VERIFY_KEYS_ONLY_SQL,
      values: [lookups, day, this.clock.now(), hashes],
    });
    return result.rows.map(toVerificationRow);
  }

  async touchLastUsed(ids: string[], at: Date[]): Promise<void> {
    await pgPool(this.db).query({ name: 'kui_touch_last_used', text: TOUCH_LAST_USED_SQL, values: [ids, at] });
  }

  async recordScopeUse(uses: ScopeUse[]): Promise<void> {
    // In (key, scope, day) order, as the statement takes its row locks: two instances' batches never deadlock.
    const sorted = [...uses].sort((a, b) =>
      a.keyId !== b.keyId
        ? a.keyId < b.keyId
          ? -1
          : 1
        : a.scope !== b.scope
          ? a.scope < b.scope
            ? -1
            : 1
          : a.day < b.day
            ? -1
            : a.day > b.day
              ? 1
              : 0,
    );
    await pgPool(this.db).query({
      name: 'kui_record_scope_use',
      text: RECORD_SCOPE_USE_SQL,
      values: [
        sorted.map((u) => u.keyId),
        sorted.map((u) => u.scope),
        sorted.map((u) => u.day),
        sorted.map((u) => u.requests),
        sorted.map((u) => u.lastUsedAt),
      ],
    });
  }

  async recordOutcomes(rows: OutcomeCounts[]): Promise<void> {
    // In (key, hour) order, as the statement takes its row locks: two instances' batches never deadlock.
    const sorted = [...rows].sort((a, b) =>
      a.keyId !== b.keyId ? (a.keyId < b.keyId ? -1 : 1) : a.hour.getTime() - b.hour.getTime(),
    );
    await pgPool(this.db).query({
      name: 'kui_record_outcomes',
      text: RECORD_OUTCOMES_SQL,
      values: [
        sorted.map((r) => r.keyId),
        sorted.map((r) => r.hour),
        ...VERIFICATION_OUTCOMES.map((_, i) => sorted.map((r) => r.counts[i])),
      ],
    });
  }
}
