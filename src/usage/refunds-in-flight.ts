import { Injectable } from '@nestjs/common';

/**
 * The refunds of this process being written to the database (a charge given back after the answer
 * was sent, on the exact path or once its count was written), so that `UsageService.settle()`
 * also waits for them. One per process (UsageLeasesModule), whichever copy of UsageService gave back.
 */
@Injectable()
export class RefundsInFlight {
  private readonly writing = new Set<Promise<void>>();

  /** Tracks a refund until it settles; returns it. */
  track(refund: Promise<void>): Promise<void> {
    this.writing.add(refund);
    const done = () => void this.writing.delete(refund);
    refund.then(done, done);
    return refund;
  }

  /** Resolves once every refund being written now has landed or failed (failures are the giver's to report). */
  settled(): Promise<void> {
    if (this.writing.size === 0) return Promise.resolve();
    return Promise.allSettled([...this.writing]).then(() => undefined);
  }
}
