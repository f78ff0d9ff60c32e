import { Injectable } from '@nestjs/common';

export type VerificationOutcome = 'ok' | 'malformed' | 'unknown' | 'revoked' | 'expired' | 'not_member' | 'not_configured' | 'error';

type Listener = (outcome: VerificationOutcome) => void;

/**
 * Counts key verifications by outcome. Kept free of any metrics library so the module does
 * not impose one on a host; the standalone app subscribes and exports them to Prometheus.
 */
@Injectable()
export class AuthMetrics {
  private readonly listeners: Listener[] = [];
  readonly counts: Record<VerificationOutcome, number> = {
    ok: 0, malformed: 0, unknown: 0, revoked: 0, expired: 0, not_member: 0, not_configured: 0, error: 0,
  };

  verification(outcome: VerificationOutcome): void {
    this.counts[outcome]++;
    for (const l of this.listeners) l(outcome);
  }

  onVerification(listener: Listener): void {
    this.listeners.push(listener);
  }
}
