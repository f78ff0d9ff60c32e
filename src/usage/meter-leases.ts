import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import type { Limit } from '../common/plan-limits.js';
import { MeterLeaseRepository, type BlockReturn } from './meter-lease.repository.js';

/** A block lapses this long after it was granted or last renewed, in database time, unless renewed. */
export const METER_LEASE_TTL_MS = 15_000;
/** A block in use is renewed (in the background, spending on) once this old. */
const RENEW_AFTER_MS = 5_000;
/** A block is spent only this long after the ask that granted or renewed it was sent: it lapses later, in any clock. */
const SPEND_FOR_MS = 12_000;
/** Blocks unused for this long are given back. */
export const METER_IDLE_MS = 5_000;
/** An instance told "no room" asks again after this long (others may have given blocks back). */
const RECHECK_MS = 500;
/**
 * A request that arrives while this instance is asking for a block waits for it, and asks again
 * with the others waiting while the limit still has room, for at most this long.
 */
export const METER_LEASE_WAIT_MS = 5000;
/** Orgs whose blocks one instance keeps; the least recently charged one's go back beyond it. */
const MAX_ORGS = 10_000;

interface Block {
  day: string;
  limit: Limit;
  tokens: number;
  /** Date.now() after which the block is renewed, and at which it stops being spent. */
  renewAt: number;
  deadline: number;
  lastUsed: number;
  notBefore: number;
  /** The cost the limit had no room for: a cheaper request still asks. */
  refusedCost: number;
  pending: Promise<void> | null;
  /** What the requests waiting on this block need together: the next ask asks for all of it. */
  demand: number;
  /** The limit's counted use plus every instance's live blocks, at the last answer. */
  taken: number;
}

/**
 * This instance's blocks of the orgs' daily limits (USAGE_CHARGING=leased), as CreditLeases holds
 * a key's credits: a block is leased from PostgreSQL in one statement that never grants past the
 * limit (kui_lease_meters), spent from memory (no promise and no round trip while it has room),
 * renewed in the background while in use, and given back when idle, at the end of its UTC day, on
 * eviction and at shutdown. Requests that arrive while a block is being asked for wait for it
 * (METER_LEASE_WAIT_MS). A block not renewed lapses METER_LEASE_TTL_MS after its last grant in
 * database time, and this instance stops spending it before then (SPEND_FOR_MS after the ask was
 * sent), so a dead instance's block holds capacity only until then.
 */
@Injectable()
export class OrgMeterLeases implements OnModuleInit, OnApplicationShutdown {
  /** This instance, as the holder of its blocks. */
  readonly holder = randomUUID();
  private readonly logger = new Logger('OrgMeterLeases');
  /** Per org, its blocks by limit name (wallet, imports, captures, a deployment meter). */
  private readonly orgs = new LRUCache<string, Map<string, Block>>({
    max: MAX_ORGS,
    dispose: (blocks, orgId, reason) => {
      if (reason === 'evict') void this.giveBackNow([...blocks].flatMap(([meter, b]) => this.unspent(orgId, meter, b)));
    },
  });

  constructor(
    private readonly repository: MeterLeaseRepository,
    private readonly jobs: PeriodicJobs,
  ) {}

  onModuleInit(): void {
    this.jobs.add({
      name: 'usage-leases-return',
      everyMs: 1000,
      firstRunAfterMs: 1000,
      // Resolves with nothing: what it gives back are units, not rows for the scheduler's log.
      run: async () => void (await this.returnIdle(Date.now() - METER_IDLE_MS)),
    });
    this.jobs.add({
      name: 'usage-leases-reclaim',
      everyMs: 60_000,
      firstRunAfterMs: 60_000,
      run: () => this.repository.reclaim(10_000),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.returnAll();
  }

  /**
   * Takes `cost` of an org's `meter` limit (a limit's name) for `day`: true when taken, false when
   * the limit has no room for it; synchronously while this instance's block covers it.
   */
  take(orgId: string, day: string, meter: string, limit: Limit, cost: number): boolean | Promise<boolean> {
    const t = Date.now();
    let blocks = this.orgs.get(orgId);
    let block = blocks?.get(meter);
    if (block && (block.day !== day || block.limit !== limit || (block.tokens > 0 && t >= block.deadline))) {
      // Another day, another limit (a plan change) or units of a block that may lapse: not this limit's units.
      void this.giveBackNow(this.unspent(orgId, meter, block));
      Object.assign(block, { day, limit, tokens: 0, notBefore: 0, refusedCost: 0, deadline: 0, renewAt: 0 });
    }
    if (block) {
      if (block.tokens >= cost) {
        block.tokens -= cost;
        block.lastUsed = t;
        if (t >= block.renewAt && !block.pending) this.renew(orgId, meter, block);
        return true;
      }
      if (block.notBefore > t && cost >= block.refusedCost) return false;
    } else {
      if (!blocks) this.orgs.set(orgId, (blocks = new Map()));
      block = {
        day,
        limit,
        tokens: 0,
        renewAt: 0,
        deadline: 0,
        lastUsed: t,
        notBefore: 0,
        refusedCost: 0,
        pending: null,
        demand: 0,
        taken: 0,
      };
      blocks.set(meter, block);
    }
    return this.lease(orgId, meter, block, cost);
  }

  /** Gives `cost` back to this instance's block of the day; false when it has none (it was given back or lapsed). */
  giveBack(orgId: string, day: string, meter: string, cost: number): boolean {
    const block = this.orgs.peek(orgId)?.get(meter);
    if (!block || block.day !== day || Date.now() >= block.deadline) return false;
    block.tokens += cost;
    return true;
  }

  /** The limit's counted use plus every instance's live blocks, when this instance last asked (0 before). */
  taken(orgId: string, meter: string): number {
    return this.orgs.peek(orgId)?.get(meter)?.taken ?? 0;
  }

  /** Gives back the blocks unused since `before` and those of another day than their last use's; resolves with the units given back. */
  async returnIdle(before: number): Promise<number> {
    const back: BlockReturn[] = [];
    const emptied: string[] = [];
    for (const [orgId, blocks] of this.orgs.entries()) {
      for (const [meter, block] of blocks) {
        if (block.pending || block.lastUsed >= before) continue;
        back.push(...this.unspent(orgId, meter, block));
        blocks.delete(meter);
      }
      if (blocks.size === 0) emptied.push(orgId);
    }
    for (const orgId of emptied) this.orgs.delete(orgId);
    await this.giveBackNow(back);
    return back.reduce((n, b) => n + b.count, 0);
  }

  /** Every block back (shutdown; tests): waits for the asks in flight first. */
  async returnAll(): Promise<number> {
    const pending: Array<Promise<void>> = [];
    for (const blocks of this.orgs.values()) for (const b of blocks.values()) if (b.pending) pending.push(b.pending);
    await Promise.allSettled(pending);
    return this.returnIdle(Number.POSITIVE_INFINITY);
  }

  private unspent(orgId: string, meter: string, block: Block): BlockReturn[] {
    const count = block.tokens;
    block.tokens = 0;
    return count > 0 ? [{ orgId, day: block.day, meter, count }] : [];
  }

  private async giveBackNow(blocks: BlockReturn[]): Promise<void> {
    if (blocks.length === 0) return;
    try {
      await this.repository.giveBack(blocks, this.holder);
    } catch (error) {
      // Not given back: the blocks hold their capacity until they lapse.
      this.logger.warn(`could not give back ${blocks.length} meter block(s): ${(error as Error).message}`);
    }
  }

  private renew(orgId: string, meter: string, block: Block): void {
    block.pending = this.fetch(orgId, meter, block, 0)
      .catch((error: unknown) => {
        // Tried again in a second, not on every charge; the block is spent until its deadline meanwhile.
        block.renewAt = Date.now() + 1000;
        this.logger.warn(`could not renew a meter block: ${(error as Error).message}`);
      })
      .finally(() => (block.pending = null));
  }

  private async lease(orgId: string, meter: string, block: Block, cost: number): Promise<boolean> {
    // Waits with the others for the ask in flight, then asks again for all who still wait, as long
    // as the limit grants something: a burst gets all the room there is, and none is refused early.
    const deadline = Date.now() + METER_LEASE_WAIT_MS;
    block.demand += cost;
    try {
      for (;;) {
        block.pending ??= this.fetch(orgId, meter, block, cost).finally(() => (block.pending = null));
        await block.pending;
        if (block.tokens >= cost) {
          block.tokens -= cost;
          block.lastUsed = Date.now();
          return true;
        }
        const t = Date.now();
        if (block.notBefore > t || t >= deadline) return false;
      }
    } finally {
      block.demand -= cost;
    }
  }

  private async fetch(orgId: string, meter: string, block: Block, cost: number): Promise<void> {
    const { day, limit } = block;
    const sentAt = Date.now();
    // What the block lacks, not the whole cost: its own units and the limit's room together pay for it.
    const need = cost > 0 ? Math.max(1, cost - block.tokens) : 0;
    // Bounded to the column's range: the waiting requests' costs may add up past it.
    const want = cost > 0 ? Math.min(Math.max(need, block.demand - block.tokens), 2_147_483_647) : 0;
    const grant = await this.repository.lease(
      { orgId, day, meter, limit, cost: need, want },
      this.holder,
      METER_LEASE_TTL_MS,
    );
    if (block.day !== day || block.limit !== limit || this.orgs.peek(orgId)?.get(meter) !== block) {
      // The block moved on while asking (a new day, a plan change, given back): the grant goes back.
      await this.giveBackNow(grant.granted > 0 ? [{ orgId, day, meter, count: grant.granted }] : []);
      return;
    }
    block.taken = grant.counted + grant.held;
    if (grant.live) {
      block.renewAt = sentAt + RENEW_AFTER_MS;
      block.deadline = sentAt + SPEND_FOR_MS;
    } else block.tokens = 0; // what this instance held has lapsed
    if (grant.granted > 0) block.tokens += grant.granted;
    else if (cost > 0) {
      block.notBefore = Date.now() + RECHECK_MS;
      block.refusedCost = cost;
    }
  }
}
