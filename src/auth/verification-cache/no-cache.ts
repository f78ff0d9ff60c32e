import type { DataSource } from 'typeorm';
import { Settings } from '../../settings/settings.js';
import { AuthMetrics } from '../auth-metrics.js';
import { VerificationCache } from './verification-cache.js';
import { VerificationLease } from './verification-lease.js';

/** For unit specs: a verification cache that is off (no database to lease on), as in the embedded default. */
export function noCache(): VerificationCache {
  const settings = new Settings({ session: { secret: 's'.repeat(32) }, verificationCache: { enabled: false } });
  const metrics = new AuthMetrics();
  return new VerificationCache(new VerificationLease(settings, {} as DataSource, metrics), settings, metrics);
}
