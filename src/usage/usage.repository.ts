import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { Limit, MeterLimits } from '../common/plan-limits.js';
import type { Plan } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { isMeter, type Attribution, type Counters, type CredentialKind, type Meter } from '../common/meters.js';
import { pgPool } from '../database/pg-pool.js';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import {
  ATTRIBUTION_PAGE_SQL,
  CHARGE_BATCH_SQL,
  CHARGE_METER_BATCH_SQL,
  CREDENTIAL_DAILY_SQL,
  HISTORY_TABLES,
  METER_REFUND_SQL,
  ORG_DAILY_SQL,
  READ_METERS_SQL,
  READ_USAGE_SQL,
  REFUND_SQL,
  type HistoryTable,
} from './usage.sql.js';
import { toDaily, type AttributionRow, type DailyRow, type RawDailyRow } from './usage-rows.js';

/** What every charge batch sends per charge, whatever its meter. */
interface BatchedCharge {
  orgId: string;
  day: string;
  meter: string;
  count: number;
  /** The limit this meter is checked against (a contract meter's: the wallet for asks and retrieves); null = unlimited. */
  limit: Limit;
  plan: Plan;
  by: Attribution;
}

/** One charge of a contract meter as the batch statement takes it. */
export interface ChargeRequest extends BatchedCharge {
  meter: Meter;
  /** All the plan's limits, recorded on the day's row with the plan as "what applied that day". */
  limits: MeterLimits;
}

/** One charge of a deployment's meter: its own limit only (each meter is its own row). */
export type MeterChargeRequest = BatchedCharge;

/** After a deployment meter's charge: its count, and the contract's counters of the day as the charge saw them. */
export interface MeterChargeAfter {
  used: number;
  counters: Counters;
}

/** The contract's counters of the day as a charge statement answers them. */
interface ChargedRow {
  idx: number;
  r_asks: number;
  r_retrieves: number;
  r_imports: number;
  r_captures: number;
}

const countersOf = (r: ChargedRow): Counters => ({
  asks: r.r_asks,
  retrieves: r.r_retrieves,
  imports: r.r_imports,
  captures: r.r_captures,
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

  private readonly charges = this.chargeBatch<ChargeRequest, ChargedRow, Counters>(
    'kui_charge_batch',
    CHARGE_BATCH_SQL,
    (batch) => [
      batch.map((c) => c.limits.wallet),
      batch.map((c) => c.limits.imports),
      batch.map((c) => c.limits.captures),
    ],
    countersOf,
  );

  /**
   * A deployment meter's charge, decided as `charge` decides the contract's (all or nothing, never
   * past its limit, attributed in the same statement); null when the limit refused it. Its own
   * batch and statement (`kui_charge_meter_batch`) on its own rows, so the contract meters'
   * statement and row locks are the same whether or not a deployment defines meters.
   */
  chargeMeter(request: MeterChargeRequest): Promise<MeterChargeAfter | null> {
    return this.meterCharges.load(request);
  }

  private readonly meterCharges = this.chargeBatch<
    MeterChargeRequest,
    ChargedRow & { r_used: number },
    MeterChargeAfter
  >(
    'kui_charge_meter_batch',
    CHARGE_METER_BATCH_SQL,
    () => [],
    (r) => ({ used: r.r_used, counters: countersOf(r) }),
  );

  /** Gives back `count` units of any meter, the contract's or the deployment's. */
  async refund(orgId: string, day: string, meter: string, count: number, by: Attribution): Promise<void> {
    await this.pool().query(
      isMeter(meter)
        ? {
            name: `kui_refund_${meter}`,
            text: REFUND_SQL[meter],
            values: [orgId, day, count, by.kind, by.credentialId],
          }
        : {
            name: 'kui_refund_meter',
            text: METER_REFUND_SQL,
            values: [orgId, day, count, by.kind, by.credentialId, meter],
          },
    );
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
      text: READ_USAGE_SQL,
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

  /** Today's count of each deployment meter an org charged (batched per turn, as `read`). */
  async readMeters(orgId: string, day: string): Promise<Record<string, number>> {
    return this.meterReads.load({ orgId, day });
  }

  private readonly meterReads = endOfTurnLoader<{ orgId: string; day: string }, Record<string, number>>(
    async (keys) => {
      const result = await this.pool().query<{ org_id: string; day: string; meter: string; used: number }>({
        name: 'kui_read_meters_many',
        text: READ_METERS_SQL,
        values: [keys.map((k) => k.orgId), keys.map((k) => k.day)],
      });
      const found = new Map<string, Record<string, number>>();
      for (const r of result.rows) {
        const key = readKey(r.org_id, r.day);
        found.set(key, { ...found.get(key), [r.meter]: r.used });
      }
      return keys.map((k) => found.get(readKey(k.orgId, k.day)) ?? {});
    },
  );

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
      Counters & {
        day: string;
        credential_kind: CredentialKind;
        credential_id: string;
        user_id: string | null;
        meters: Record<string, number> | null;
      }
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
      meters: r.meters ?? {},
    }));
  }

  /**
   * Deletes at most `batch` rows older than `before` from one history table; returns how many.
   * Bounded so that pruning never holds locks or a transaction for long.
   */
  async pruneBatch(table: HistoryTable, before: string, batch: number): Promise<number> {
    const key = HISTORY_TABLES[table];
    const result = await this.pool().query(
      `DELETE FROM ${table} WHERE (${key}) IN (SELECT ${key} FROM ${table} WHERE day < $1::date LIMIT $2)`,
      [before, batch],
    );
    return result.rowCount ?? 0;
  }

  /**
   * A charge statement for the charges of one turn, one batch in flight: each charge's org, day,
   * meter, count, limit, plan, the statement's `own` columns, attribution, then the commit mode.
   * One row per charge that passed, by its 1-based `idx` in the batch; a refused one answers null.
   */
  private chargeBatch<C extends BatchedCharge, Row extends { idx: number }, After>(
    name: string,
    text: string,
    own: (batch: readonly C[]) => unknown[],
    after: (row: Row) => After,
  ) {
    return endOfTurnLoader<C, After | null>(async (batch) => {
      const result = await this.pool().query<Row>({
        name,
        text,
        values: [
          batch.map((c) => c.orgId),
          batch.map((c) => c.day),
          batch.map((c) => c.meter),
          batch.map((c) => c.count),
          batch.map((c) => c.limit),
          batch.map((c) => c.plan),
          ...own(batch),
          batch.map((c) => c.by.kind),
          batch.map((c) => c.by.credentialId),
          batch.map((c) => c.by.userId),
          !this.settings.usageSynchronousCommit,
        ],
      });
      const answers = new Array<After | null>(batch.length).fill(null);
      for (const r of result.rows) answers[r.idx - 1] = after(r);
      return answers;
    }, 1);
  }

  // Hot paths (every /usage read, every charge) use named statements on the driver's pool.
  private pool(): Pool {
    return pgPool(this.db);
  }
}
