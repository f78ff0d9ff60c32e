import { ApiKeyStore, type KeyVerificationRow, type OutcomeCounts } from '../../src/auth/api-key-store.js';
import {
  VERIFICATION_OUTCOMES,
  VerificationOutcomeRecorder,
  type Outcome,
} from '../../src/auth/verification-outcome-recorder.js';

/** A key store that only takes verification outcomes, batch by batch. */
class OutcomeWrites extends ApiKeyStore {
  constructor(private readonly batches: OutcomeCounts[][]) {
    super();
  }
  findForVerification(): Promise<KeyVerificationRow[]> {
    throw new Error('not used: this store takes outcomes only');
  }
  touchLastUsed(): Promise<void> {
    throw new Error('not used: this store takes outcomes only');
  }
  recordScopeUse(): Promise<void> {
    throw new Error('not used: this store takes outcomes only');
  }
  async recordOutcomes(counts: OutcomeCounts[]): Promise<void> {
    this.batches.push(counts);
  }
}

/**
 * A real VerificationOutcomeRecorder over an in-memory store, for the unit specs of the places
 * that decide an outcome: `counted()` writes what is pending and answers, per key, its non-zero
 * outcomes summed over every hour written so far.
 */
export class CountedOutcomes {
  readonly batches: OutcomeCounts[][] = [];
  readonly recorder = new VerificationOutcomeRecorder(new OutcomeWrites(this.batches));

  async counted(): Promise<Record<string, Partial<Record<Outcome, number>>>> {
    await this.recorder.flush();
    const byKey: Record<string, Partial<Record<Outcome, number>>> = {};
    for (const row of this.batches.flat()) {
      const counts = (byKey[row.keyId] ??= {});
      VERIFICATION_OUTCOMES.forEach((o, i) => {
        if (row.counts[i] > 0) counts[o] = (counts[o] ?? 0) + row.counts[i];
      });
    }
    return byKey;
  }
}
