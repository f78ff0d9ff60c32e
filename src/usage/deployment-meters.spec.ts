import { beforeEach, describe, expect, it, vi } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { FakeDirectory } from '../../test/support/fakes.js';
import { testPrincipal } from '../../test/support/principal.js';
import { UsageLimitExceededError, type Counters } from '../common/meters.js';
import { parsePlanLimits } from '../common/plan-limits.js';
import type { EventOutbox } from '../events/event-outbox.js';
import { Settings } from '../settings/settings.js';
import type { MeterChargeRequest, UsageRepository } from './usage.repository.js';
import type { DailyRow } from './usage-rows.js';
import { UsageThresholds } from './usage-thresholds.js';
import { UsageService } from './usage.service.js';

const ORG = '0f8e6a34-51c3-4d8e-a1f2-9c0b7d6e5a41';
const DAY = '2031-03-14';
const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };

/** The deployment meters' side of the repository in memory: all or nothing against the limit it is given. */
class FakeMeterRepository {
  readonly used = new Map<string, number>();
  readonly meterCharges: Array<Omit<MeterChargeRequest, 'by'>> = [];
  contractCharges = 0;
  contract: Counters = { ...ZERO };

  async chargeMeter({ by: _by, ...request }: MeterChargeRequest) {
    this.meterCharges.push(request);
    const key = `${request.orgId}/${request.day}/${request.meter}`;
    const used = (this.used.get(key) ?? 0) + request.count;
    if (request.limit !== null && used > request.limit) return null;
    this.used.set(key, used);
    return { used, counters: { ...this.contract } };
  }

  async charge() {
    this.contractCharges++;
    return { ...this.contract };
  }

  async read(): Promise<Counters> {
    return { ...this.contract };
  }

  async readMeters(orgId: string, day: string): Promise<Record<string, number>> {
    const prefix = `${orgId}/${day}/`;
    return Object.fromEntries(
      [...this.used].filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]),
    );
  }
}

describe('UsageService with meters the deployment defines', () => {
  let repo: FakeMeterRepository;
  let sut: UsageService;
  let settings: Settings;
  let directory: FakeDirectory;

  beforeEach(() => {
    repo = new FakeMeterRepository();
    directory = new FakeDirectory();
    directory.org('free', ORG);
    const meters = { exports: { description: 'Report exports' }, pages: { description: 'Pages rendered' } };
    settings = new Settings({
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      meters,
      planLimits: parsePlanLimits({ free: { exports: 3 }, pro: { exports: 100 } }, 'PLAN_LIMITS', ['exports', 'pages']),
      clock: new TestClock(`${DAY}T15:09:26.535Z`),
    });
    sut = new UsageService(repo as unknown as UsageRepository, directory, settings);
  });

  it('charges a deployment meter on its own row against its own limit, and one without a limit as unlimited', async () => {
    const result = await sut.charge(ORG, 'exports', 2);
    await sut.charge(ORG, 'pages', 500);

    expect(result).toMatchObject({ meter: 'exports', count: 2, used: 2, day: DAY, counters: ZERO });
    expect(repo.meterCharges).toEqual([
      { orgId: ORG, day: DAY, meter: 'exports', count: 2, limit: 3, plan: 'free' },
      { orgId: ORG, day: DAY, meter: 'pages', count: 500, limit: null, plan: 'free' },
    ]);
    expect(repo.contractCharges).toBe(0);
  });

  it('refuses a charge past the meter’s limit with what it found used, naming the meter', async () => {
    await sut.charge(ORG, 'exports', 2);

    const error = await sut.charge(ORG, 'exports', 2).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(UsageLimitExceededError);
    expect(error).toMatchObject({ meter: 'exports', limit: 3, used: 2, requested: 2 });
    expect((error as Error).message).toMatch(/^Daily exports limit reached: 2 of 3 used, 2 more requested/);
  });

  it('raises usage.threshold under the meter’s own name when a charge crosses 80 % and 100 % of its limit', async () => {
    const emitOnce = vi.fn(async (_kind: string, _subject: string, _mark: string, _event: object) => undefined);
    const outbox = { enabled: true, emitOnce } as unknown as EventOutbox;
    const withEvents = new UsageService(
      repo as unknown as UsageRepository,
      directory,
      settings,
      undefined,
      undefined,
      new UsageThresholds(outbox),
    );

    await withEvents.charge(ORG, 'exports', 2);
    expect(emitOnce).not.toHaveBeenCalled();
    await withEvents.charge(ORG, 'exports', 1);

    expect(emitOnce.mock.calls.map(([kind, subject, mark]) => [kind, subject, mark])).toEqual([
      ['usage_threshold', `${ORG}:exports:${DAY}`, '80'],
      ['usage_threshold', `${ORG}:exports:${DAY}`, '100'],
    ]);
    expect(emitOnce.mock.calls[1][3]).toMatchObject({
      type: 'usage.threshold',
      data: { meter: 'exports', threshold: 100, used: 3, limit: 3 },
    });
  });

  it('refuses a meter the deployment does not define before touching anything, listing the defined ones', async () => {
    await expect(sut.charge(ORG, 'export', 1)).rejects.toThrow(
      new RangeError('meter must be one of asks, retrieves, imports, captures, exports, pages; got "export"'),
    );
    expect(repo.meterCharges).toEqual([]);
    expect(repo.contractCharges).toBe(0);
  });

  it('reports every meter in `meters`, the contract fields unchanged beside it', async () => {
    repo.contract = { asks: 4, retrieves: 2, imports: 1, captures: 0 };
    await sut.charge(ORG, 'exports', 1, testPrincipal({ orgId: ORG, plan: 'free' }));

    const report = await sut.report(testPrincipal({ orgId: ORG, plan: 'free' }));

    expect(report.mcp_queries).toEqual({ used: 6, limit: 100 });
    expect(Object.keys(report)).toEqual([
      'plan',
      'mcp_queries',
      'breakdown',
      'imports',
      'captures',
      'resets_at',
      'meters',
    ]);
    expect(report.meters).toEqual({
      asks: { used: 4, limit: 100 },
      retrieves: { used: 2, limit: 100 },
      imports: { used: 1, limit: 10 },
      captures: { used: 0, limit: 100 },
      exports: { used: 1, limit: 3 },
      pages: { used: 0, limit: null },
    });
  });

  it('shows a day’s deployment meters with the limit recorded with their charge, else the day’s plan’s as configured', () => {
    const row: DailyRow = {
      day: DAY,
      counters: ZERO,
      plan: 'pro',
      limits: null,
      meters: { pages: { used: 7, limit: 9 } },
    };

    const [day] = sut.toDailyUsage([row], 'free');

    expect(day.plan).toBe('pro');
    expect(day.meters).toMatchObject({ exports: { used: 0, limit: 100 }, pages: { used: 7, limit: 9 } });
    expect(day.meters.imports).toEqual({ used: 0, limit: 1000 });
  });
});
