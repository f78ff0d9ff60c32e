import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { pgPool } from '../../database/pg-pool.js';
import { LEASE_CREDITS_SQL, LEASE_WINDOW_SQL, RETURN_CREDITS_SQL } from './key-limits.sql.js';

export interface WindowGrant {
  granted: number;
  /** Tokens left in the shared bucket after this grant. */
  left: number;
}

export interface CreditGrant {
  granted: number;
  epoch: number;
  period: Date | null;
  left: number;
}

/**
 * The shared state of per-key limits: leases of window tokens and of credits, and credits given
 * back. Named statements on the driver's pool, like the verification read: they run once per
 * block of allowance on busy keys.
 */
@Injectable()
export class KeyLimitStore {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async leaseWindow(keyId: string, name: string, capacity: number, perMs: number, want: number, now: Date, cost: number): Promise<WindowGrant> {
    const { rows } = await pgPool(this.db).query<{ granted: number; left: number }>({
      name: 'kui_lease_window',
      text: LEASE_WINDOW_SQL,
      values: [keyId, name, capacity, perMs, want, now, cost],
    });
    return { granted: Number(rows[0]!.granted), left: Number(rows[0]!.left) };
  }

  /** Null when the key has no credits (any more). */
  async leaseCredits(keyId: string, cost: number, period: Date | null, maxBlock: number): Promise<CreditGrant | null> {
    const { rows } = await pgPool(this.db).query<{ granted: string; epoch: number; period: Date | null; left: string }>({
      name: 'kui_lease_credits',
      text: LEASE_CREDITS_SQL,
      values: [keyId, cost, period, maxBlock],
    });
    const r = rows[0];
    return r ? { granted: Number(r.granted), epoch: r.epoch, period: r.period, left: Number(r.left) } : null;
  }

  async returnCredits(keyId: string, amount: number, epoch: number, period: Date | null): Promise<void> {
    await pgPool(this.db).query({ name: 'kui_return_credits', text: RETURN_CREDITS_SQL, values: [keyId, amount, epoch, period] });
  }
}
