import { command, int, meter, ORG, Streamed, time, UsageError, uuid } from '../command-spec.js';

/** Usage and audit: charging by hand and the streaming exports. */
export const DATA_COMMANDS = {
  'usage record': command({
    summary: "Charge an org's meter through the same atomic path as the service; over the limit nothing is recorded.",
    flags: {
      org: ORG(),
      meter: {
        value: 'asks|retrieves|imports|captures|<meter>',
        help: "The meter to charge: one of the contract's four or one USAGE_METERS defines.",
        required: true,
      },
      count: { value: '<n>', help: 'Units, 1 to 1000000 (default 1).' },
    },
    prints: '{"org_id","meter","count","used","asks","retrieves","imports","captures","resets_at"}',
    args: (f) => ({ org: uuid(f, 'org'), meter: meter(f, 'meter'), count: int(f, 'count', 1, 1, 1_000_000) }),
    run: (s, a) => s.recordUsage(a.org, a.meter, a.count),
  }),
  'audit export': command({
    summary: "Stream an org's audit events as JSON Lines, oldest first (read in keyset batches).",
    flags: {
      org: ORG(),
      since: {
        value: '<time>',
        help: 'From this instant, inclusive: an RFC 3339 time or a date (YYYY-MM-DD, UTC midnight).',
      },
      until: { value: '<time>', help: 'Up to this instant, exclusive: an RFC 3339 time or a date.' },
    },
    prints: 'one audit event per line: {"id","time","org_id","action","actor",...}',
    args: (f) => ({ org: uuid(f, 'org'), since: time(f, 'since'), until: time(f, 'until') }),
    run: (s, a) =>
      Promise.resolve(
        new Streamed(async (write) => {
          await s.exportAudit(a.org, a.since, a.until, write);
        }),
      ),
  }),
  'usage export': command({
    summary: "Stream an org's daily usage (per key with --by-key) as CSV or JSON Lines.",
    flags: {
      org: ORG(),
      from: { value: 'YYYY-MM-DD', help: 'First UTC day (default: 29 days before --to).' },
      to: { value: 'YYYY-MM-DD', help: 'Last UTC day (default: today).' },
      'by-key': { value: '', help: 'One row per day and credential instead of per day.', boolean: true },
      format: { value: 'csv|jsonl', help: 'Output format (default csv).' },
    },
    prints: 'CSV with a header row, or one JSON object per line',
    args: (f) => {
      const format = f.format ?? 'csv';
      if (format !== 'csv' && format !== 'jsonl')
        throw new UsageError(`--format must be csv or jsonl, got "${format}"`);
      // `as const` keeps `format` narrowed to 'csv' | 'jsonl' (the inferred return type would widen it).
      return {
        org: uuid(f, 'org'),
        from: f.from,
        to: f.to,
        byKey: f['by-key'] !== undefined,
        format,
      } as const;
    },
    run: async (_s, a, app) => {
      const [{ UsageExporter }, { UnknownOrgError }, { BadRequestException }, { AdminError }] = await Promise.all([
        import('../../usage/usage-export.js'),
        import('../../common/meters.js'),
        import('@nestjs/common'),
        import('../directory-admin.service.js'),
      ]);
      try {
        const lines = await app.get(UsageExporter).open(a.org, { from: a.from, to: a.to }, a.byKey, a.format);
        return new Streamed(async (write) => {
          for await (const line of lines) await write(line);
        });
      } catch (error) {
        if (error instanceof UnknownOrgError) throw new AdminError(`no org with id ${a.org}`);
        // The range checks speak of the HTTP parameters; here they are flags.
        if (error instanceof BadRequestException) throw new UsageError(`--${error.message}`, 'usage export');
        throw error;
      }
    },
  }),
};
