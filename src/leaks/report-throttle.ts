import { Inject, Injectable } from '@nestjs/common';
import { throttledUnit } from '../auth/auth-failure-throttle.js';
import { Settings } from '../settings/settings.js';

export const REPORT_LIMIT = Symbol('REPORT_LIMIT');
const WINDOW_MS = 60_000;
const MAX_TRACKED = 50_000;

/** POST /credentials/revoke per client address (IPv6 by /64), in a fixed one-minute window; per instance. */
@Injectable()
export class ReportThrottle {
  private readonly windows = new Map<string, { start: number; count: number }>();
  constructor(
    private readonly settings: Settings,
    @Inject(REPORT_LIMIT) private readonly limit: number,
  ) {}

  /** Counts a request; returns the seconds to wait when over the limit, else 0. */
  take(address: string): number {
    if (this.limit <= 0) return 0;
    const unit = throttledUnit(address);
    const now = this.settings.clock.now().getTime();
    let w = this.windows.get(unit);
    if (!w || now - w.start >= WINDOW_MS) {
      if (this.windows.size >= MAX_TRACKED) this.windows.clear();
      w = { start: now, count: 0 };
      this.windows.set(unit, w);
    }
    w.count++;
    return w.count > this.limit ? Math.max(1, Math.ceil((w.start + WINDOW_MS - now) / 1000)) : 0;
  }
}
