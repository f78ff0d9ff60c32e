import { BadRequestException, ForbiddenException, Injectable, NotFoundException } from '@nestjs/common';
import { ApiKeyRepository } from '../api-keys/api-key.repository.js';
import type { Principal } from '../auth/principal.js';
import { utcDay } from '../common/clock.js';
import type { Plan } from '../common/roles.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { resolveDayRange } from '../common/day-range.js';
import { UsageRepository } from './usage.repository.js';
import { UsageService } from './usage.service.js';
import type { DailyUsageReportDto, KeyDailyUsageReportDto } from './dto/daily-usage.dto.js';
import { ERRORS } from '../common/error-messages.js';

export type DailyUsageReport = DailyUsageReportDto;
export type KeyDailyUsageReport = KeyDailyUsageReportDto;

export interface DayRangeQuery {
  from?: string;
  to?: string;
}

/** Daily history per org and per API key, read from the counters and their attribution. */
@Injectable()
export class UsageHistoryService {
  constructor(
    private readonly usage: UsageService,
    private readonly history: UsageRepository,
    private readonly keys: ApiKeyRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  /** GET /usage/daily: the principal's org, one entry per UTC day. */
  async orgDaily(principal: Principal, query: DayRangeQuery): Promise<DailyUsageReport> {
    if (!principal.orgId || !principal.plan) {
      throw new BadRequestException(ERRORS.noOrgSelectedForSession);
    }
    const range = this.range(query);
    // Leased charging: this instance's pending counts first, as GET /usage shows them.
    await this.usage.settle();
    const rows = await this.history.orgDaily(principal.orgId, range.from, range.to, null, 1000);
    return { ...range, days: this.usage.toDailyUsage(rows, principal.plan) };
  }

  /** GET /api-keys/{keyID}/usage: one of the caller's own keys; anyone else's is a 404, as a missing one. */
  async ownKeyDaily(principal: Principal, keyId: string, query: DayRangeQuery): Promise<KeyDailyUsageReport> {
    const range = this.range(query);
    const key = await this.keys.findOwnership(keyId);
    if (!key || key.userId !== principal.userId) throw new NotFoundException(ERRORS.keyNotFound);
    const plan = (await this.directory.orgPlan(key.orgId)) ?? 'free';
    return this.keyDaily(key.orgId, keyId, range, plan);
  }

  /**
   * GET /orgs/{org_id}/api-keys/{keyID}/usage: owners and admins of the org, for any key bound
   * to it. Not a member (or no such org): 404; a member below admin: 403; a key of another org: 404.
   */
  async orgKeyDaily(
    principal: Principal,
    orgId: string,
    keyId: string,
    query: DayRangeQuery,
  ): Promise<KeyDailyUsageReport> {
    const range = this.range(query);
    const [standing] = await this.directory.userOrgs(principal.userId, orgId, 1);
    if (!standing) throw new NotFoundException(ERRORS.orgNotFound);
    if (standing.role !== 'owner' && standing.role !== 'admin') throw new ForbiddenException(ERRORS.keyUsageAdminsOnly);
    const key = await this.keys.findOwnership(keyId);
    if (!key || key.orgId !== orgId) throw new NotFoundException(ERRORS.keyNotFound);
    return this.keyDaily(orgId, keyId, range, standing.plan);
  }

  private async keyDaily(
    orgId: string,
    keyId: string,
    range: { from: string; to: string },
    plan: Plan,
  ): Promise<KeyDailyUsageReport> {
    await this.usage.settle();
    const rows = await this.history.credentialDaily(orgId, 'api_key', keyId, range.from, range.to);
    return { key_id: keyId, org_id: orgId, ...range, days: this.usage.toDailyUsage(rows, plan) };
  }

  private range(query: DayRangeQuery) {
    return resolveDayRange(query, utcDay(this.settings.clock.now()), this.settings.usageRetentionDays);
  }
}
