import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import type { Limit } from '../common/plan-limits.js';
import { Lease, type LeaseSource } from './lease.js';
import { MeterBlockStore, type BlockReturn } from './meter-block-store.js';

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
/** Orgs whose blocks one instance keeps; the least recently charged one's go back beyond it. */
const MAX_ORGS = 10_000;

/** This instance's block of one limit of an org's day: a lease that lapses unless renewed. */
class MeterBlock extends Lease {
  /**
   * Date.now() after which the block is renewed, and at which it stops being spent (not
   * `expiresAt`: a block past it is given back and asked afresh by the next charge, while one
   * just granted is spent however long its ask took).
   */
  renewAt = 0;
  deadline = 0;
  /** The limit's counted use plus every instance's live blocks, at the last answer. */
  taken = 0;

  constructor(
    readonly orgId: string,
    readonly meter: string,
    public day: string,
    public limit: Limit,
    lastUsed: number,
  ) {
    super(lastUsed);
  }

  /** Now a block of another day or limit, holding nothing (its units were taken out to go back). */
  moveTo(day: string, limit: Limit): void {
    this.day = day;
    this.limit = limit;
    this.tokens = 0;
    this.forget();
    this.deadline = 0;
    this.renewAt = 0;
  }
}

/**
 * This instance's blocks of the orgs' daily limits (USAGE_CHARGING=leased), leases like a key's
 * credits: a block is leased from PostgreSQL in one statement that never grants past the limit
 * (the MeterBlockStore port; usage's kui_lease_meters), spent from memory (no promise and no round
 * trip while it has room), renewed in the background while in use, and given back when idle, at
 * the end of its UTC day, on eviction and at shutdown. Requests that arrive while a block is being
 * asked for wait for it (LEASE_WAIT_MS). A block not renewed lapses METER_LEASE_TTL_MS after its
 * last grant in database time, and this instance stops spending it before then (SPEND_FOR_MS
 * after the ask was sent), so a dead instance's block holds capacity only until then.
 */
@Injectable()
export class OrgMeterLeases implements OnModuleInit, OnApplicationShutdown {
  /** This instance, as the holder of its blocks. */
  readonly holder = randomUUID();
  private readonly logger = new Logger('OrgMeterLeases');
  /** Per org, its blocks by limit name (wallet, imports, captures, a deployment meter). */
  private readonly orgs = new LRUCache<string, Map<string, MeterBlock>>({
    max: MAX_ORGS,
    dispose: (blocks, _orgId, reason) => {
      if (reason === 'evict') void this.giveBackNow([...blocks.values()].flatMap((b) => this.unspent(b)));
    },
  });
  private readonly source: LeaseSource<MeterBlock> = { ask: (block, cost) => this.ask(block, cost) };

  constructor(
    private readonly store: MeterBlockStore,
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
      run: () => this.store.reclaim(10_000),
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
      void this.giveBackNow(this.unspent(block));
      block.moveTo(day, limit);
    }
    if (block) {
      if (block.take(cost, t)) {
        if (t >= block.renewAt && !block.pending) this.renew(block);
        return true;
      }
      if (block.refuses(cost, t)) return false;
    } else {
      if (!blocks) this.orgs.set(orgId, (blocks = new Map()));
      blocks.set(meter, (block = new MeterBlock(orgId, meter, day, limit, t)));
    }
    return block.wait(cost, this.source);
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
        if (!block.idleSince(before)) continue;
        back.push(...this.unspent(block));
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
    const pending: Array<Promise<boolean>> = [];
    for (const blocks of this.orgs.values()) for (const b of blocks.values()) if (b.pending) pending.push(b.pending);
    await Promise.allSettled(pending);
    return this.returnIdle(Number.POSITIVE_INFINITY);
  }

  private unspent(block: MeterBlock): BlockReturn[] {
    const count = block.release();
    return count > 0 ? [{ orgId: block.orgId, day: block.day, meter: block.meter, count }] : [];
  }

  private async giveBackNow(blocks: BlockReturn[]): Promise<void> {
    if (blocks.length === 0) return;
    try {
      await this.store.giveBack(blocks, this.holder);
    } catch (error) {
      // Not given back: the blocks hold their capacity until they lapse.
      this.logger.warn(`could not give back ${blocks.length} meter block(s): ${(error as Error).message}`);
    }
  }

  private renew(block: MeterBlock): void {
    block.pending = this.ask(block, 0)
      .catch((error: unknown) => {
        // Tried again in a second, not on every charge; the block is spent until its deadline meanwhile.
        block.renewAt = Date.now() + 1000;
        this.logger.warn(`could not renew a meter block: ${(error as Error).message}`);
        return true;
      })
      .finally(() => (block.pending = null));
  }

  private async ask(block: MeterBlock, cost: number): Promise<boolean> {
    const { orgId, meter, day, limit } = block;
    const sentAt = Date.now();
    // What the block lacks, not the whole cost: its own units and the limit's room together pay for it.
    const need = cost > 0 ? Math.max(1, cost - block.tokens) : 0;
    // Bounded to the column's range: the waiting requests' costs may add up past it.
    const want = cost > 0 ? Math.min(Math.max(need, block.demand - block.tokens), 2_147_483_647) : 0;
    const grant = await this.store.lease(
      { orgId, day, meter, limit, cost: need, want },
      this.holder,
      METER_LEASE_TTL_MS,
    );
    if (block.day !== day || block.limit !== limit || this.orgs.peek(orgId)?.get(meter) !== block) {
      // The block moved on while asking (a new day, a plan change, given back): the grant goes back.
      await this.giveBackNow(grant.granted > 0 ? [{ orgId, day, meter, count: grant.granted }] : []);
      return true;
    }
    block.taken = grant.counted + grant.held;
    if (grant.live) {
      block.renewAt = sentAt + RENEW_AFTER_MS;
      block.deadline = sentAt + SPEND_FOR_MS;
    } else block.tokens = 0; // what this instance held has lapsed
    if (grant.granted > 0) block.tokens += grant.granted;
    else if (cost > 0) block.refuse(cost, Date.now() + RECHECK_MS);
    return true;
  }
}
