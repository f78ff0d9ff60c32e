import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { MAX_LIMIT, type Limit } from '../common/plan-limits.js';
import { TurnBatcher } from '../common/turn-batcher.js';
import type { Counters, Meter } from './meters.js';

// What a limit is checked against, per meter (the wallet is asks + retrieves), in bigint so the
// sum itself can never overflow.
const USED: Record<Meter, string> = {
  asks: 'c.asks::bigint + c.retrieves',
  retrieves: 'c.asks::bigint + c.retrieves',
  imports: 'c.imports::bigint',
  captures: 'c.captures::bigint',
};

/**
 * One statement per charge: insert today's row or add to it, but only while the limit holds.
 * ON CONFLICT DO UPDATE locks the row and re-checks the WHERE against the latest committed
 * version, so concurrent charges from any number of processes never pass the limit, and a
 * refused charge writes nothing. Every meter, unlimited ones included, is also bounded by
 * what its integer column holds, so a charge is refused cleanly rather than overflowing.
 */
function chargeSql(meter: Meter): string {
  return `
    INSERT INTO usage_counters AS c (org_id, day, ${meter})
    SELECT $1::uuid, $2::date, $3::int WHERE $4::int IS NULL OR $3::int <= $4::int
    ON CONFLICT (org_id, day) DO UPDATE SET ${meter} = c.${meter} + EXCLUDED.${meter}
      WHERE c.${meter}::bigint + EXCLUDED.${meter} <= ${MAX_LIMIT}
        AND ($4::int IS NULL OR ${USED[meter]} + EXCLUDED.${meter} <= $4::int)
    RETURNING c.asks, c.retrieves, c.imports, c.captures`;
}

const CHARGE_SQL = Object.fromEntries((['asks', 'retrieves', 'imports', 'captures'] as const).map((m) => [m, chargeSql(m)])) as Record<Meter, string>;

// Gives back a charge whose work failed; never below zero, and on the day the charge was made.
const REFUND_SQL = Object.fromEntries(
  (['asks', 'retrieves', 'imports', 'captures'] as const).map((m) => [
    m,
    `UPDATE usage_counters SET ${m} = GREATEST(${m} - $3::int, 0) WHERE org_id = $1::uuid AND day = $2::date`,
  ]),
) as Record<Meter, string>;

const readKey = (orgId: string, day: string) => `${orgId.toLowerCase()}|${day}`;

const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };

@Injectable()
export class UsageRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The counters after the charge, or null when the limit refused it (nothing recorded). */
  async charge(orgId: string, day: string, meter: Meter, count: number, limit: Limit): Promise<Counters | null> {
    const result = await this.pool().query<Counters>({
      name: `kui_charge_${meter}`,
      text: CHARGE_SQL[meter],
      values: [orgId, day, count, limit],
    });
    return result.rows[0] ?? null;
  }

  async refund(orgId: string, day: string, meter: Meter, count: number): Promise<void> {
    await this.pool().query({ name: `kui_refund_${meter}`, text: REFUND_SQL[meter], values: [orgId, day, count] });
  }

  /**
   * Today's counters of an org. Reads that arrive in the same event-loop turn share one
   * statement (GET /usage is a hot path); every read still sees the database as of its request.
   */
  async read(orgId: string, day: string): Promise<Counters> {
    return (await this.reads.load({ orgId, day })) ?? { ...ZERO };
  }

  private readonly reads = new TurnBatcher<{ orgId: string; day: string }, Counters>(
    async (keys) => {
      const result = await this.pool().query<Counters & { org_id: string; day: string }>({
        name: 'kui_read_usage_many',
        text: `SELECT c.org_id, to_char(c.day, 'YYYY-MM-DD') AS day, c.asks, c.retrieves, c.imports, c.captures
                 FROM usage_counters c
                 JOIN unnest($1::uuid[], $2::date[]) AS k(org_id, day) ON c.org_id = k.org_id AND c.day = k.day`,
        values: [keys.map((k) => k.orgId), keys.map((k) => k.day)],
      });
      return new Map(
        result.rows.map((r) => [readKey(r.org_id, r.day), { asks: r.asks, retrieves: r.retrieves, imports: r.imports, captures: r.captures }]),
      );
    },
    (k) => readKey(k.orgId, k.day),
  );

  // Hot paths (every /usage read, every charge) use named statements on the driver's pool.
  private pool(): Pool {
    return (this.db.driver as unknown as { master: Pool }).master;
  }
}
