import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { endOfTurnLoader } from '../common/end-of-turn-loader.js';
import { pgPool } from '../database/pg-pool.js';
import { LEASE_CREDITS_SQL, LEASE_WINDOWS_SQL, RETURN_CREDITS_SQL, RETURN_WINDOW_SQL } from './key-limits.sql.js';

export interface WindowGrant {
  granted: number;
  /** The fixed window the grant counts in (its start, ms since the epoch): the lease ends with it. */
  start: number;
  /** What was leased in the window before it. */
  previous: number;
  /** What is leased in it, this grant included. */
  current: number;
}

export interface CreditGrant {
  granted: number;
  epoch: number;
  period: Date | null;
  left: number;
}

interface WindowAsk {
  keyId: string;
  name: string;
  limit: number;
  seconds: number;
  want: number;
  now: Date;
  cost: number;
}

interface CreditAsk {
  keyId: string;
  cost: number;
  period: Date | null;
  maxBlock: number;
  /** What the requests waiting on this instance need together (at least `cost`). */
  want: number;
}

/** PostgreSQL's deadlock_detected: the statement that lost is retried (it wrote nothing). */
const DEADLOCK = '40P01';

/**
 * Splits a batch into rounds in which no identity repeats (a statement may update a row once),
 * each round in the batch's order; nearly every batch is one round.
 */
function rounds<T>(batch: readonly T[], identity: (item: T) => string): number[][] {
  const out: number[][] = [];
  const seen: Set<string>[] = [];
  batch.forEach((item, i) => {
    const id = identity(item);
    let r = seen.findIndex((ids) => !ids.has(id));
    if (r < 0) {
      r = seen.push(new Set()) - 1;
      out.push([]);
    }
    seen[r].add(id);
    out[r].push(i);
  });
  return out;
}

/**
 * The shared state of per-key limits: leases of window tokens and of credits, and credits given
 * back. Leases asked in the same event-loop turn go as one statement (`endOfTurnLoader`, as
 * verification does): when many keys start at once (after an idle spell, a restart, a deploy),
 * they cost a few round trips, not one each. Named statements on the driver's pool.
 */
@Injectable()
export class KeyLimitStore {
  private readonly windows = endOfTurnLoader<WindowAsk, WindowGrant>((asks) => this.leaseWindows(asks));
  private readonly credits = endOfTurnLoader<CreditAsk, CreditGrant | null>((asks) => this.leaseCreditBlocks(asks));

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Leases up to `want` of a window of `limit` per `seconds` (at least `cost`, or nothing when
   * less is available), counted in the fixed window `now` falls in.
   */
  leaseWindow(
    keyId: string,
    name: string,
    limit: number,
    seconds: number,
    want: number,
    now: Date,
    cost: number,
  ): Promise<WindowGrant> {
    return this.windows.load({ keyId, name, limit, seconds, want, now, cost });
  }

  /** Null when the key has no credits (any more). */
  leaseCredits(
    keyId: string,
    cost: number,
    period: Date | null,
    maxBlock: number,
    want = cost,
  ): Promise<CreditGrant | null> {
    return this.credits.load({ keyId, cost, period, maxBlock, want: Math.max(cost, want) });
  }

  /** Gives back `amount` leased and not spent in the fixed window starting at `start` (RETURN_WINDOW_SQL). */
  async returnWindow(keyId: string, name: string, amount: number, start: Date, seconds: number): Promise<void> {
    await pgPool(this.db).query({
      name: 'kui_return_window',
      text: RETURN_WINDOW_SQL,
      values: [keyId, name, amount, start, seconds],
    });
  }

  async returnCredits(keyId: string, amount: number, epoch: number, period: Date | null): Promise<void> {
    await pgPool(this.db).query({
      name: 'kui_return_credits',
      text: RETURN_CREDITS_SQL,
      values: [keyId, amount, epoch, period],
    });
  }

  /**
   * A lease statement, tried again if it lost a deadlock: leases lock their rows in key order, as
   * the last-used writer does, but an org-wide change (a policy's lifetime, stale keys) may not.
   */
  private async query<R extends object>(statement: {
    name: string;
    text: string;
    values: unknown[];
  }): Promise<{ rows: R[] }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await pgPool(this.db).query<R & QueryResultRow>(statement);
      } catch (error) {
        if ((error as { code?: string }).code !== DEADLOCK || attempt >= 3) throw error;
      }
    }
  }

  private async leaseWindows(asks: readonly WindowAsk[]): Promise<WindowGrant[]> {
    const grants: WindowGrant[] = new Array<WindowGrant>(asks.length);
    for (const round of rounds(asks, (a) => `${a.keyId} ${a.name}`)) {
      const of = round.map((i) => asks[i]);
      const { rows } = await this.query<{
        key_id: string;
        name: string;
        granted: number;
        window_start: Date;
        previous: number;
        current: number;
      }>({
        name: 'kui_lease_windows',
        text: LEASE_WINDOWS_SQL,
        values: [
          of.map((a) => a.keyId),
          of.map((a) => a.name),
          of.map((a) => a.limit),
          of.map((a) => a.seconds),
          of.map((a) => a.want),
          of.map((a) => a.now),
          of.map((a) => a.cost),
        ],
      });
      const byWindow = new Map(rows.map((r) => [`${r.key_id} ${r.name}`, r]));
      for (const i of round) {
        const r = byWindow.get(`${asks[i].keyId.toLowerCase()} ${asks[i].name}`);
        if (!r) throw new Error(`window lease of key ${asks[i].keyId} returned no row`);
        grants[i] = { granted: r.granted, start: r.window_start.getTime(), previous: r.previous, current: r.current };
      }
    }
    return grants;
  }

  private async leaseCreditBlocks(asks: readonly CreditAsk[]): Promise<(CreditGrant | null)[]> {
    const grants: (CreditGrant | null)[] = new Array<CreditGrant | null>(asks.length).fill(null);
    for (const round of rounds(asks, (a) => a.keyId)) {
      const of = round.map((i) => asks[i]);
      const { rows } = await this.query<{
        id: string;
        granted: string;
        epoch: number;
        period: Date | null;
        left: string;
      }>({
        name: 'kui_lease_credits',
        text: LEASE_CREDITS_SQL,
        values: [
          of.map((a) => a.keyId),
          of.map((a) => a.cost),
          of.map((a) => a.period),
          of.map((a) => a.maxBlock),
          of.map((a) => a.want),
        ],
      });
      const byKey = new Map(rows.map((r) => [r.id, r]));
      for (const i of round) {
        const r = byKey.get(asks[i].keyId.toLowerCase());
        grants[i] = r ? { granted: Number(r.granted), epoch: r.epoch, period: r.period, left: Number(r.left) } : null;
      }
    }
    return grants;
  }
}
