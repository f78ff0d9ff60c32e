import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { MeterBlockStore, type BlockAsk, type BlockGrant, type BlockReturn } from '../budgets/meter-block-store.js';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import type { Limit } from '../common/plan-limits.js';
import type { Attribution } from '../common/meters.js';
import { pgPool } from '../database/pg-pool.js';
import { Settings } from '../settings/settings.js';
import { COUNT_METERS_SQL, LEASE_METERS_SQL, RECLAIM_BLOCKS_SQL, RETURN_BLOCKS_SQL } from './meter-leases.sql.js';

/** Units of one meter an instance spent from its blocks, by one credential, with the plan and limits they were charged under. */
export interface MeterCount {
  orgId: string;
  day: string;
  /** The contract's or a deployment's meter. */
  meter: string;
  count: number;
  by: Attribution;
  plan: string;
  walletLimit: Limit;
  importsLimit: Limit;
  capturesLimit: Limit;
  /** A deployment meter's own limit (null for the contract's). */
  meterLimit: Limit;
}

/** The largest block one lease takes: a hot org's instance asks again after this many charges. */
export const MAX_METER_BLOCK = 10_000;

/**
 * The statements of leased charging, on the driver's pool with named statements (every one is per
 * block or per flush, never per request). Asks of the same event-loop turn go as one statement.
 * Budgets' MeterBlockStore port (the blocks OrgMeterLeases holds), bound in UsageLeasesModule, and
 * the counts MeterCounts writes.
 */
@Injectable()
export class MeterLeaseRepository extends MeterBlockStore {
  private readonly asks = endOfTurnLoader<BlockAsk & { holder: string; ttlMs: number }, BlockGrant>((batch) =>
    this.leaseBlocks(batch),
  );

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly settings: Settings,
  ) {
    super();
  }

  lease(ask: BlockAsk, holder: string, ttlMs: number): Promise<BlockGrant> {
    return this.asks.load({ ...ask, holder, ttlMs });
  }

  private async leaseBlocks(batch: ReadonlyArray<BlockAsk & { holder: string; ttlMs: number }>): Promise<BlockGrant[]> {
    // The loader batches by turn; every ask of one batch comes from this instance (one holder).
    const { rows } = await pgPool(this.db).query<
      { idx: number; r_granted: number; r_live: boolean; r_counted: string; r_held: string } & QueryResultRow
    >({
      name: 'kui_lease_meters',
      text: LEASE_METERS_SQL,
      values: [
        batch.map((a) => a.orgId),
        batch.map((a) => a.day),
        batch.map((a) => a.meter),
        batch.map((a) => a.limit),
        batch.map((a) => a.cost),
        batch.map((a) => a.want),
        MAX_METER_BLOCK,
        batch[0].holder,
        batch[0].ttlMs,
      ],
    });
    const grants = new Array<BlockGrant>(batch.length);
    for (const r of rows) {
      grants[r.idx - 1] = {
        granted: r.r_granted,
        live: r.r_live,
        counted: Number(r.r_counted),
        held: Number(r.r_held),
      };
    }
    return grants;
  }

  /** Writes counts and takes them out of the holder's blocks, in one transaction; the counted use after it, per (org, day, limit). */
  async count(
    counts: readonly MeterCount[],
    holder: string,
  ): Promise<Array<{ orgId: string; day: string; meter: string; used: number }>> {
    const { rows } = await pgPool(this.db).query<
      { r_org: string; r_day: string; r_meter: string; r_used: string } & QueryResultRow
    >({
      name: 'kui_count_meters',
      text: COUNT_METERS_SQL,
      values: [
        counts.map((c) => c.orgId),
        counts.map((c) => c.day),
        counts.map((c) => c.meter),
        counts.map((c) => c.count),
        counts.map((c) => c.by.kind),
        counts.map((c) => c.by.credentialId),
        counts.map((c) => c.by.userId),
        counts.map((c) => c.plan),
        counts.map((c) => c.walletLimit),
        counts.map((c) => c.importsLimit),
        counts.map((c) => c.capturesLimit),
        counts.map((c) => c.meterLimit),
        holder,
        !this.settings.usageSynchronousCommit,
      ],
    });
    return rows.map((r) => ({ orgId: r.r_org, day: r.r_day, meter: r.r_meter, used: Number(r.r_used) }));
  }

  async giveBack(blocks: readonly BlockReturn[], holder: string): Promise<void> {
    if (blocks.length === 0) return;
    await pgPool(this.db).query({
      name: 'kui_return_meter_blocks',
      text: RETURN_BLOCKS_SQL,
      values: [
        blocks.map((b) => b.orgId),
        blocks.map((b) => b.day),
        blocks.map((b) => b.meter),
        blocks.map((b) => b.count),
        holder,
      ],
    });
  }

  /** Deletes up to `batch` rows that hold nothing (lapsed or spent); how many. */
  async reclaim(batch: number): Promise<number> {
    const result = await pgPool(this.db).query({
      name: 'kui_reclaim_meter_blocks',
      text: RECLAIM_BLOCKS_SQL,
      values: [batch],
    });
    return result.rowCount ?? 0;
  }
}
