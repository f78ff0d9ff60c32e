import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { Limit, MeterLimits } from '../common/plan-limits.js';
import type { Plan } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import type { Attribution, Counters, CredentialKind, Meter } from '../common/meters.js';
import { pgPool } from '../database/pg-pool.js';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';

/** One charge as the batch statement takes it. */
export interface ChargeRequest {
  orgId: string;
  day: string;
  meter: Meter;
  count: number;
  /** The limit this meter is checked against (the wallet for asks and retrieves); null = unlimited. */
  limit: Limit;
  /** The plan and all its limits, recorded on the day's row as "what applied that day". */
  plan: Plan;
  limits: MeterLimits;
  by: Attribution;
}

/** One UTC day of history: the counters, and the plan and limits recorded with them (null when nothing was charged). */
export interface DailyRow {
  day: string;
  counters: Counters;
  plan: Plan | null;
  limits: MeterLimits | null;
}

/** One row of `usage export --by-key`. */
export interface AttributionRow {
  day: string;
  kind: CredentialKind;
  credentialId: string;
  userId: string | null;
  counters: Counters;
}

// Gives back a charge whose work failed, on the day it was made and never below zero, from the
// org's counter and from the credential's row together (one statement, counter row first).
const REFUND_SQL = Object.fromEntries(
  (['asks', 'retrieves', 'imports', 'captures'] as const).map((m) => [
    m,
    `WITH c AS (
       UPDATE usage_counters SET ${m} = GREATEST(${m} - $3::int, 0) WHERE org_id = $1::uuid AND day = $2::date RETURNING 1
     )
     UPDATE usage_attribution SET ${m} = GREATEST(${m} - $3::int, 0)
      WHERE org_id = $1::uuid AND day = $2::date AND credential_kind = $4 AND credential_id = $5::uuid
        AND EXISTS (SELECT 1 FROM c)`,
  ]),
) as Record<Meter, string>;

const DAY_COLUMNS = `to_char(d.day, 'YYYY-MM-DD') AS day`;
const COUNTER_COLUMNS = (t: string) =>
  `COALESCE(${t}.asks, 0) AS asks, COALESCE(${t}.retrieves, 0) AS retrieves, COALESCE(${t}.imports, 0) AS imports, COALESCE(${t}.captures, 0) AS captures`;
const LIMIT_COLUMNS = `c.plan, c.wallet_limit, c.imports_limit, c.captures_limit`;
const DAYS = `generate_series($2::date, $3::date, interval '1 day') AS d(day)`;

const ORG_DAILY_SQL = `
  SELECT ${DAY_COLUMNS}, ${COUNTER_COLUMNS('c')}, ${LIMIT_COLUMNS}
    FROM ${DAYS}
    LEFT JOIN usage_counters c ON c.org_id = $1::uuid AND c.day = d.day::date
   WHERE d.day > COALESCE($4::date, '-infinity'::date)
   ORDER BY d.day
   LIMIT $5`;

const CREDENTIAL_DAILY_SQL = `
  SELECT ${DAY_COLUMNS}, ${COUNTER_COLUMNS('a')}, ${LIMIT_COLUMNS}
    FROM ${DAYS}
    LEFT JOIN usage_attribution a ON a.org_id = $1::uuid AND a.day = d.day::date AND a.credential_kind = $4 AND a.credential_id = $5::uuid
    LEFT JOIN usage_counters c ON c.org_id = $1::uuid AND c.day = d.day::date
   ORDER BY d.day`;

const ATTRIBUTION_PAGE_SQL = `
  SELECT to_char(a.day, 'YYYY-MM-DD') AS day, a.credential_kind, a.credential_id, a.user_id, a.asks, a.retrieves, a.imports, a.captures
    FROM usage_attribution a
   WHERE a.org_id = $1::uuid AND a.day BETWEEN $2::date AND $3::date
     AND ($4::date IS NULL OR (a.day, a.credential_kind, a.credential_id) > ($4::date, $5::text, $6::uuid))
   ORDER BY a.day, a.credential_kind, a.credential_id
   LIMIT $7`;

interface RawDailyRow extends Counters {
  day: string;
  plan: Plan | null;
  wallet_limit: number | null;
  imports_limit: number | null;
  captures_limit: number | null;
}

const toDaily = (r: RawDailyRow): DailyRow => ({
  day: r.day,
  counters: { asks: r.asks, retrieves: r.retrieves, imports: r.imports, captures: r.captures },
  plan: r.plan,
  limits: r.plan ? { wallet: r.wallet_limit, imports: r.imports_limit, captures: r.captures_limit } : null,
});

const readKey = (orgId: string, day: string) => `${orgId.toLowerCase()}|${day}`;

const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };

@Injectable()
export class UsageRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly settings: Settings,
  ) {}

  /**
   * The counters after the charge, or null when the limit refused it (nothing recorded).
   * Charges that arrive in the same event-loop turn share one statement and one commit
   * (`kui_charge_batch`), each still decided alone and in arrival order; the credential's
   * share is written by the same statement, so attribution costs no round trip. One batch in
   * flight per instance.
   */
  charge(request: ChargeRequest): Promise<Counters | null> {
    return this.charges.load(request);
  }

  private readonly charges = endOfTurnLoader<ChargeRequest, Counters | null>(async (batch) => {
    const result = await this.pool().query<{
      idx: number;
      r_asks: number;
      r_retrieves: number;
      r_imports: number;
      r_captures: number;
    }>({
      name: 'kui_charge_batch',
      text: 'SELECT idx, r_asks, r_retrieves, r_imports, r_captures FROM kui_charge_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)',
      values: [
        batch.map((c) => c.orgId),
        batch.map((c) => c.day),
        batch.map((c) => c.meter),
        batch.map((c) => c.count),
        batch.map((c) => c.limit),
        batch.map((c) => c.plan),
        batch.map((c) => c.limits.wallet),
        batch.map((c) => c.limits.imports),
        batch.map((c) => c.limits.captures),
        batch.map((c) => c.by.kind),
        batch.map((c) => c.by.credentialId),
        batch.map((c) => c.by.userId),
        !this.settings.usageSynchronousCommit,
      ],
    });
    // One row per charge that passed, by its 1-based position in the batch; a refused one has none.
    const after: Array<Counters | null> = new Array<Counters | null>(batch.length).fill(null);
    for (const r of result.rows)
      after[r.idx - 1] = { asks: r.r_asks, retrieves: r.r_retrieves, imports: r.r_imports, captures: r.r_captures };
    return after;
  }, 1);

  async refund(orgId: string, day: string, meter: Meter, count: number, by: Attribution): Promise<void> {
    await this.pool().query({
      name: `kui_refund_${meter}`,
      text: REFUND_SQL[meter],
      values: [orgId, day, count, by.kind, by.credentialId],
    });
  }

  /**
   * Today's counters of an org. Reads that arrive in the same event-loop turn share one
   * statement (GET /usage is a hot path); every read still sees the database as of its request.
   */
  async read(orgId: string, day: string): Promise<Counters> {
    return (await this.reads.load({ orgId, day })) ?? { ...ZERO };
  }

  private readonly reads = endOfTurnLoader<{ orgId: string; day: string }, Counters | undefined>(async (keys) => {
    const result = await this.pool().query<Counters & { org_id: string; day: string }>({
      name: 'kui_read_usage_many',
      text: `SELECT c.org_id, to_char(c.day, 'YYYY-MM-DD') AS day, c.asks, c.retrieves, c.imports, c.captures
               FROM usage_counters c
               JOIN unnest($1::uuid[], $2::date[]) AS k(org_id, day) ON c.org_id = k.org_id AND c.day = k.day`,
      values: [keys.map((k) => k.orgId), keys.map((k) => k.day)],
    });
    const found = new Map(
      result.rows.map((r) => [
        readKey(r.org_id, r.day),
        { asks: r.asks, retrieves: r.retrieves, imports: r.imports, captures: r.captures },
      ]),
    );
    return keys.map((k) => found.get(readKey(k.orgId, k.day)));
  });

  /**
   * Every UTC day from `from` to `to` (inclusive) of an org, days without charges as zeros;
   * after `afterDay` when given (keyset paging for exports), at most `limit` days.
   */
  async orgDaily(
    orgId: string,
    from: string,
    to: string,
    afterDay: string | null = null,
    limit = 1000,
  ): Promise<DailyRow[]> {
    const rows: RawDailyRow[] = await this.db.query(ORG_DAILY_SQL, [orgId, from, to, afterDay, limit]);
    return rows.map(toDaily);
  }

  /** Every UTC day from `from` to `to` of what one credential charged to an org (zeros included), with the org's recorded limits. */
  async credentialDaily(
    orgId: string,
    kind: CredentialKind,
    credentialId: string,
    from: string,
    to: string,
  ): Promise<DailyRow[]> {
    const rows: RawDailyRow[] = await this.db.query(CREDENTIAL_DAILY_SQL, [orgId, from, to, kind, credentialId]);
    return rows.map(toDaily);
  }

  /** One page of an org's attribution rows in (day, kind, credential) order, after the given row. */
  async attributionPage(
    orgId: string,
    from: string,
    to: string,
    after: { day: string; kind: CredentialKind; credentialId: string } | null,
    limit: number,
  ): Promise<AttributionRow[]> {
    const rows: Array<
      Counters & { day: string; credential_kind: CredentialKind; credential_id: string; user_id: string | null }
    > = await this.db.query(ATTRIBUTION_PAGE_SQL, [
      orgId,
      from,
      to,
      after?.day ?? null,
      after?.kind ?? null,
      after?.credentialId ?? null,
      limit,
    ]);
    return rows.map((r) => ({
      day: r.day,
      kind: r.credential_kind,
      credentialId: r.credential_id,
      userId: r.user_id,
      counters: { asks: r.asks, retrieves: r.retrieves, imports: r.imports, captures: r.captures },
    }));
  }

  /**
   * Deletes at most `batch` rows older than `before` from one history table; returns how many.
   * Bounded so that pruning never holds locks or a transaction for long.
   */
  async pruneBatch(table: 'usage_counters' | 'usage_attribution', before: string, batch: number): Promise<number> {
    const key = table === 'usage_counters' ? '(org_id, day)' : '(org_id, day, credential_kind, credential_id)';
    const result = await this.pool().query(
      `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key.slice(1, -1)} FROM ${table} WHERE day < $1::date LIMIT $2)`,
      [before, batch],
    );
    return result.rowCount ?? 0;
  }

  // Hot paths (every /usage read, every charge) use named statements on the driver's pool.
  private pool(): Pool {
    return pgPool(this.db);
  }
}
