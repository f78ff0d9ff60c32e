import type { Client } from 'openapi-fetch';
import { dataOf } from './errors.js';
import type { paths } from './generated/openapi.js';
import type { DailyUsageQuery, DailyUsageReport, OrgOption, UsageReport } from './types.js';

/** The `X-Org-Id` header of `/me` and `/usage`, when an org is named. */
export const orgHeader = (options: OrgOption) => (options.orgId === undefined ? {} : { 'X-Org-Id': options.orgId });

/** The org's plan and meters (an API key needs the `decisions:read` scope). */
export class Usage {
  constructor(private readonly api: Client<paths>) {}

  /** Today's meters: used and limit of each, and when they reset. */
  get(options: OrgOption = {}): Promise<UsageReport> {
    return dataOf(this.api.GET('/usage', { params: { header: orgHeader(options) } }));
  }

  /** The meters day by day over `from`..`to` (UTC days). */
  daily(query: DailyUsageQuery & OrgOption = {}): Promise<DailyUsageReport> {
    const { orgId, ...days } = query;
    return dataOf(this.api.GET('/usage/daily', { params: { query: days, header: orgHeader({ orgId }) } }));
  }
}
