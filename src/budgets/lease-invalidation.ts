import { Injectable, type OnModuleInit } from '@nestjs/common';
import { CoherenceLease } from '../coherence/coherence-lease.js';
import { CreditLeases } from './credit-leases.js';
import { WindowLeases } from './window-leases.js';

/**
 * A change to a key (a PATCH of its windows or credits, a revoke, any change the verification
 * cache hears of) drops this instance's leases of that key before the change is acknowledged:
 * the writer, which waits for every instance's acknowledgement as a revoke does, answers once no
 * instance spends a lease taken under the old setting, and what they held unspent is given back.
 */
@Injectable()
export class LeaseInvalidation implements OnModuleInit {
  constructor(
    private readonly coherence: CoherenceLease,
    private readonly windows: WindowLeases,
    private readonly credits: CreditLeases,
  ) {}

  onModuleInit(): void {
    this.coherence.onInvalidate((targets) => {
      // A lapse or a TRUNCATE names no key: every request then reads its key's row afresh, and a
      // lease of another setting is not spent (WindowLeases, CreditLeases check it per request).
      const keyId = targets?.keyId;
      if (!keyId) return;
      const given = [this.windows.drop(keyId), this.credits.drop(keyId)].filter((p) => p !== undefined);
      return given.length > 0 ? Promise.all(given).then(() => undefined) : undefined;
    });
  }
}
