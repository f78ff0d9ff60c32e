import { Injectable } from '@nestjs/common';
import { utcDay } from '../common/clock.js';
import { Settings } from '../settings/settings.js';
import { OrgDirectory } from '../directory/org-directory.js';
import { resolveDayRange } from '../common/day-range.js';
import { UnknownOrgError, type CredentialKind } from '../common/meters.js';
import { UsageRepository } from './usage.repository.js';
import { UsageService } from './usage.service.js';

export type ExportFormat = 'csv' | 'jsonl';

const PAGE = 1000;
const ORG_COLUMNS = [
  'day',
  'plan',
  'asks',
  'retrieves',
  'imports',
  'captures',
  'wallet_limit',
  'imports_limit',
  'captures_limit',
] as const;
const KEY_COLUMNS = [
  'day',
  'credential_kind',
  'credential_id',
  'user_id',
  'asks',
  'retrieves',
  'imports',
  'captures',
] as const;

/** A row as JSON Lines write it: flat values, and `meters` (the deployment's meters) when it defines any. */
type Row = Record<string, string | number | null | Record<string, unknown>>;

/** A CSV column's value: the row's field, or a path into it (`meters.exports.used`); every column names a leaf. */
const valueAt = (row: Row, column: string) =>
  column.split('.').reduce<unknown>((v, key) => (v as Record<string, unknown> | undefined)?.[key], row) as
    string | number | null | undefined;

// Every value is a day, a UUID, a fixed word or an integer (a meter's name is lower-case letters,
// digits, "_" and "-"): nothing needs CSV quoting.
const csvLine = (columns: readonly string[], row: Row) =>
  columns
    .map((c) => {
      const v = valueAt(row, c);
      return v === null || v === undefined ? '' : String(v);
    })
    .join(',');

/**
 * `usage export`: an org's daily history, or its split by credential, as CSV or JSON Lines.
 * Reads in pages of 1000 rows (keyset) and yields line by line, so any range streams in
 * constant memory.
 */
@Injectable()
export class UsageExporter {
  constructor(
    private readonly usage: UsageService,
    private readonly history: UsageRepository,
    private readonly directory: OrgDirectory,
    private readonly settings: Settings,
  ) {}

  /** Checks the arguments (throws before anything is written), then returns the lines. */
  async open(
    orgId: string,
    query: { from?: string; to?: string },
    byKey: boolean,
    format: ExportFormat,
  ): Promise<AsyncIterable<string>> {
    const range = resolveDayRange(query, utcDay(this.settings.clock.now()), this.settings.usageRetentionDays, null);
    const plan = await this.directory.orgPlan(orgId);
    if (!plan) throw new UnknownOrgError(orgId);
    await this.usage.settle();
    // The deployment's meters follow the contract's columns: in JSON Lines as `meters`, in CSV as its paths.
    const own = this.settings.meters.deployment;
    const columns = [
      ...(byKey ? KEY_COLUMNS : ORG_COLUMNS),
      ...own.flatMap((m) => (byKey ? [`meters.${m}`] : [`meters.${m}.used`, `meters.${m}.limit`])),
    ];
    const rows = byKey ? this.keyRows(orgId, range.from, range.to) : this.orgRows(orgId, range.from, range.to, plan);
    return (async function* () {
      if (format === 'csv') yield `${columns.join(',')}\n`;
      for await (const row of rows) yield `${format === 'csv' ? csvLine(columns, row) : JSON.stringify(row)}\n`;
    })();
  }

  private async *orgRows(orgId: string, from: string, to: string, plan: 'free' | 'pro'): AsyncIterable<Row> {
    let after: string | null = null;
    for (;;) {
      const page = await this.history.orgDaily(orgId, from, to, after, PAGE);
      const own = this.settings.meters.deployment;
      for (const d of this.usage.toDailyUsage(page, plan)) {
        const row: Row = {
          day: d.day,
          plan: d.plan,
          asks: d.breakdown.asks,
          retrieves: d.breakdown.retrieves,
          imports: d.imports.used,
          captures: d.captures.used,
          wallet_limit: d.mcp_queries.limit,
          imports_limit: d.imports.limit,
          captures_limit: d.captures.limit,
        };
        if (own.length > 0) row.meters = Object.fromEntries(own.map((m) => [m, d.meters[m]]));
        yield row;
      }
      if (page.length < PAGE) return;
      after = page[page.length - 1].day;
    }
  }

  private async *keyRows(orgId: string, from: string, to: string): AsyncIterable<Row> {
    let after: { day: string; kind: CredentialKind; credentialId: string } | null = null;
    for (;;) {
      const page = await this.history.attributionPage(orgId, from, to, after, PAGE);
      const own = this.settings.meters.deployment;
      for (const r of page) {
        const row: Row = {
          day: r.day,
          credential_kind: r.kind,
          credential_id: r.credentialId,
          user_id: r.userId,
          ...r.counters,
        };
        if (own.length > 0) row.meters = Object.fromEntries(own.map((m) => [m, r.meters[m] ?? 0]));
        yield row;
      }
      if (page.length < PAGE) return;
      const last = page[page.length - 1];
      after = { day: last.day, kind: last.kind, credentialId: last.credentialId };
    }
  }
}
