import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { PeriodicJobs } from '../common/periodic-jobs.js';
import { Lease, type LeaseSource } from './lease.js';
import { KeyLimitStore } from './key-limit.store.js';
import { nextRefill, refillPeriodStart, type CreditRefill } from './key-settings.js';

/** The most credits one lease takes: a block ends in a few thousand requests on the busiest key. */
export const MAX_CREDIT_BLOCK = 10_000;
/** Credits leased and not spent for this long are given back to the key. */
export const CREDIT_IDLE_MS = 10_000;
/** An instance told "spent" asks again after this long (others may have given credits back). */
const RECHECK_MS = 1000;

/** This instance's lease of a key's credits: the setting (credits_epoch) and refill period it belongs to. */
class CreditLease extends Lease {
  constructor(
    readonly keyId: string,
    public epoch: number,
    public period: number | null,
    lastUsed: number,
  ) {
    super(lastUsed);
  }
}

/** 0: admitted; -1: spent with no refill; otherwise spent, and milliseconds until the refill. */
export type CreditAdmission = number;

/**
 * Credits, exact across instances: the balance lives on the key row and an instance leases a
 * block of it in one statement (never below zero: the row lock orders leases), spends it from
 * memory, and gives back what it has not spent after CREDIT_IDLE_MS or at shutdown. A lease
 * belongs to one setting (credits_epoch) and one refill period: credits leased before a change
 * or a refill are not spent after it.
 */
@Injectable()
export class CreditLeases implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('CreditLeases');
  private readonly leases = new LRUCache<string, CreditLease>({
    max: 100_000,
    dispose: (lease, _keyId, reason) => {
      if (reason === 'evict' && lease.tokens > 0) void this.giveBackNow(lease);
    },
  });
  private readonly source: LeaseSource<CreditLease> = { ask: (lease, cost) => this.ask(lease, cost) };

  constructor(
    private readonly store: KeyLimitStore,
    private readonly jobs: PeriodicJobs,
  ) {}

  onModuleInit(): void {
    this.jobs.add({
      name: 'credit-leases-return',
      everyMs: CREDIT_IDLE_MS,
      firstRunAfterMs: CREDIT_IDLE_MS,
      run: () => this.returnIdle(Date.now() - CREDIT_IDLE_MS),
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.returnIdle(Number.POSITIVE_INFINITY);
  }

  take(
    keyId: string,
    credits: { refill: CreditRefill | null; epoch: number },
    cost: number,
    now: Date,
  ): CreditAdmission | Promise<CreditAdmission> {
    const t = now.getTime();
    const period = credits.refill ? refillPeriodStart(credits.refill, now).getTime() : null;
    let lease = this.leases.get(keyId);
    if (lease && (lease.epoch !== credits.epoch || lease.period !== period)) {
      // Leased under another setting or before the refill: not this balance's credits.
      lease.tokens = 0;
      lease.forget();
      lease.epoch = credits.epoch;
      lease.period = period;
    }
    if (lease && lease.take(cost, t)) return 0;
    if (lease && lease.refuses(cost, t)) return this.spent(credits.refill, now);
    if (!lease) this.leases.set(keyId, (lease = new CreditLease(keyId, credits.epoch, period, t)));
    return this.lease(lease, credits.refill, cost, now);
  }

  /**
   * Gives back what a refused request took at `takenAt`, only to a lease of the same setting
   * (epoch) and refill period: a credit taken before a change never lands in the new balance.
   */
  giveBack(keyId: string, credits: { refill: CreditRefill | null; epoch: number }, cost: number, takenAt: Date): void {
    const lease = this.leases.get(keyId);
    const period = credits.refill ? refillPeriodStart(credits.refill, takenAt).getTime() : null;
    if (lease && lease.epoch === credits.epoch && lease.period === period) lease.tokens += cost;
  }

  /**
   * The key's settings changed: what this instance holds unspent goes back now, to the setting it
   * was leased under (after a change of the credits the statement refuses it: the new balance is
   * exactly what was set), and the next request asks the balance afresh. Resolves once given back.
   */
  drop(keyId: string): Promise<void> | undefined {
    const lease = this.leases.peek(keyId);
    if (!lease) return undefined;
    lease.forget();
    return lease.tokens > 0 ? this.giveBackNow(lease) : undefined;
  }

  /** Gives back every lease unused since `before`. */
  async returnIdle(before: number): Promise<number> {
    let returned = 0;
    for (const lease of this.leases.values()) {
      if (lease.tokens > 0 && lease.idleSince(before)) {
        returned += lease.tokens;
        await this.giveBackNow(lease);
      }
    }
    return returned;
  }

  private async giveBackNow(lease: CreditLease): Promise<void> {
    const { keyId } = lease;
    const amount = lease.release();
    try {
      await this.store.returnCredits(keyId, amount, lease.epoch, lease.period === null ? null : new Date(lease.period));
    } catch (error) {
      this.logger.warn(`could not give back ${amount} credits of key ${keyId}: ${(error as Error).message}`);
    }
  }

  private spent(refill: CreditRefill | null, now: Date): CreditAdmission {
    return refill ? Math.max(1, nextRefill(refill, now).getTime() - now.getTime()) : -1;
  }

  private async lease(
    lease: CreditLease,
    refill: CreditRefill | null,
    cost: number,
    now: Date,
  ): Promise<CreditAdmission> {
    return (await lease.wait(cost, this.source, now.getTime())) ? 0 : this.spent(refill, now);
  }

  /** False when the key has no credits any more (a change this instance's row predates). */
  private ask(lease: CreditLease, cost: number): Promise<boolean> {
    return this.store
      .leaseCredits(
        lease.keyId,
        cost,
        lease.period === null ? null : new Date(lease.period),
        MAX_CREDIT_BLOCK,
        lease.demand,
      )
      .then((grant) => {
        if (!grant) return false;
        if (grant.epoch !== lease.epoch) {
          lease.epoch = grant.epoch;
          lease.tokens = 0;
        }
        if (grant.granted > 0) lease.tokens += grant.granted;
        else lease.refuse(cost, Date.now() + RECHECK_MS);
        return true;
      });
  }
}
