/**
 * A request that arrives while its instance is asking for a lease waits for it, and asks again
 * with the others waiting while the source still grants something, for at most this long (the
 * lease request's own bound), then is answered.
 */
export const LEASE_WAIT_MS = 5000;

/**
 * A lease's last use is recorded to within this many milliseconds: idle leases are returned after
 * seconds (CREDIT_IDLE_MS, an org meter block's idle time), so a second more or less is immaterial.
 */
export const LAST_USE_STEP_MS = 1000;

/** What differs between budgets: how a lease is asked for, and in which clock it is judged. */
export interface LeaseSource<L extends Lease> {
  /**
   * Asks the budget's store for `cost`, and for what every request waiting on the lease needs
   * (`lease.demand`), and puts the answer in the lease: the tokens granted, or the refusal
   * (`refuse`). Resolves false when the budget no longer limits the request (it is admitted
   * without spending).
   */
  ask(lease: L, cost: number): Promise<boolean>;
  /** The instant the lease's refusal and expiry are judged at, in the clock the source sets them in (default Date.now()). */
  now?(): number;
  /** A request stopped waiting on the lease (its demand is already out of `lease.demand`). */
  left?(lease: L): void;
}

/**
 * One instance's lease of one budget (a key's credits, a key's or plan's rate window, an org's
 * daily meter): the tokens it holds, drawn from PostgreSQL and spent from memory, the ask in
 * flight that the requests it does not cover wait for, and the remembered refusal. The methods a
 * request calls while the lease covers it (`take`, `refuses`) allocate nothing and return no
 * promise; each budget's holder subclasses it with what identifies the lease and when it applies.
 */
export class Lease {
  tokens = 0;
  /** The end of the period the tokens were granted in (a rate window's fixed window): never spent from then on. */
  expiresAt = Number.POSITIVE_INFINITY;
  /** The source had too little: a cost of at least `refusedCost` is refused here until then, without asking. */
  notBefore = 0;
  refusedCost = 0;
  lastUsed: number;
  pending: Promise<boolean> | null = null;
  /** What the requests waiting on this lease need together: the next ask asks for all of it. */
  demand = 0;

  constructor(lastUsed: number) {
    this.lastUsed = lastUsed;
  }

  /** Takes `cost` at `t` from what this instance holds; false when it holds too little (or the tokens expired). */
  take(cost: number, t: number): boolean {
    if (this.tokens < cost || t >= this.expiresAt) return false;
    this.tokens -= cost;
    // The last use to within LAST_USE_STEP_MS: an instant is a heap number, and storing a new one
    // in this long-lived object on every request allocated one per request for the collector.
    if (t - this.lastUsed >= LAST_USE_STEP_MS) this.lastUsed = t;
    return true;
  }

  /** Whether a request of `cost` at `t` is refused from memory: the source refused it, or a cheaper one, until later. */
  refuses(cost: number, t: number): boolean {
    return this.notBefore > t && cost >= this.refusedCost;
  }

  /** The source refused `cost`: refuse it (and anything dearer) here until `until`. */
  refuse(cost: number, until: number): void {
    this.notBefore = until;
    this.refusedCost = cost;
  }

  /** Forgets a refusal: the next request asks the source. */
  forget(): void {
    this.notBefore = 0;
    this.refusedCost = 0;
  }

  /** Takes every unspent token out of the lease, to be given back: how many. */
  release(): number {
    const tokens = this.tokens;
    this.tokens = 0;
    return tokens;
  }

  /** Unused since `before` (to within LAST_USE_STEP_MS), with no ask in flight: its tokens may go back. */
  idleSince(before: number): boolean {
    return !this.pending && this.lastUsed < before;
  }

  /**
   * What a request this lease does not cover does: waits with the others for the ask in flight,
   * then asks again for all who still wait, as long as the source grants something, for at most
   * LEASE_WAIT_MS. A burst gets all there is, and none is refused early. Resolves true once `cost`
   * is taken or the budget no longer limits, false when refused. `usedAt`: the last use to record
   * when it is the request's instant rather than the one the tokens were taken at.
   */
  async wait<L extends Lease>(this: L, cost: number, source: LeaseSource<L>, usedAt?: number): Promise<boolean> {
    const deadline = Date.now() + LEASE_WAIT_MS;
    this.demand += cost;
    try {
      for (;;) {
        this.pending ??= source.ask(this, cost).finally(() => (this.pending = null));
        if (!(await this.pending)) return true;
        const t = source.now ? source.now() : Date.now();
        if (this.take(cost, t)) {
          if (usedAt !== undefined) this.lastUsed = usedAt;
          return true;
        }
        if (this.notBefore > t || Date.now() >= deadline) return false;
      }
    } finally {
      this.demand -= cost;
      source.left?.(this);
    }
  }
}
