import type { Limit } from '../common/plan-limits.js';

/** An ask for a block of one limit (`meter`: wallet, imports, captures or a deployment meter) of an org's day. */
export interface BlockAsk {
  orgId: string;
  day: string;
  meter: string;
  limit: Limit;
  /** The request's cost: nothing is granted when less is left; 0 only renews the instance's live block. */
  cost: number;
  /** What the requests waiting on this instance need together. */
  want: number;
}

export interface BlockGrant {
  granted: number;
  /** Whether this instance holds a live block of the limit after the ask. */
  live: boolean;
  /** The counted use of the limit, and every instance's live blocks after the grant. */
  counted: number;
  held: number;
}

/** A block's unspent units, given back. */
export interface BlockReturn {
  orgId: string;
  day: string;
  meter: string;
  count: number;
}

/**
 * Where the blocks of the orgs' daily limits that OrgMeterLeases holds are leased from: a port
 * that budgets declares and usage implements over its own table (usage_leases), binding it beside
 * its repository, so budgets never imports usage.
 */
export abstract class MeterBlockStore {
  /** Leases (or, with cost 0, renews) `holder`'s block; it lapses `ttlMs` after this ask in database time unless renewed. */
  abstract lease(ask: BlockAsk, holder: string, ttlMs: number): Promise<BlockGrant>;

  /** Gives blocks' unspent units back from `holder`'s blocks. */
  abstract giveBack(blocks: readonly BlockReturn[], holder: string): Promise<void>;

  /** Deletes up to `batch` blocks that hold nothing (lapsed or spent); how many. */
  abstract reclaim(batch: number): Promise<number>;
}
