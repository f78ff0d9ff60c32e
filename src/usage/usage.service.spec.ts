import { BadRequestException } from '@nestjs/common';
import { beforeEach, describe, expect, it } from 'vitest';
import { TestClock } from '../../test/support/clock.js';
import { testPrincipal } from '../../test/support/principal.js';
import type { Principal } from '../auth/principal.js';
import { parsePlanLimits, type Limit } from '../common/plan-limits.js';
import { Settings } from '../settings/settings.js';
import { FakeDirectory } from '../../test/support/fakes.js';
import {
  UnknownOrgError,
  UsageLimitExceededError,
  type Attribution,
  type Counters,
  type Meter,
} from '../common/meters.js';
import type { ChargeRequest, UsageRepository } from './usage.repository.js';
import { PendingRefunds } from './pending-refunds.js';
import { UsageService } from './usage.service.js';

const ORG = '0f8e6a34-51c3-4d8e-a1f2-9c0b7d6e5a41';
const ZERO: Counters = { asks: 0, retrieves: 0, imports: 0, captures: 0 };

/** Counters in memory, with the repository's contract: all or nothing against the limit it is given. */
class FakeUsageRepository {
  readonly rows = new Map<string, Counters>();
  readonly charges: Array<{ orgId: string; day: string; meter: Meter; count: number; limit: Limit; by?: Attribution }> =
    [];
  readonly reads: Array<{ orgId: string; day: string }> = [];

  async charge({ orgId, day, meter, count, limit, by }: ChargeRequest): Promise<Counters | null> {
    this.charges.push(
      by.kind === 'system' ? { orgId, day, meter, count, limit } : { orgId, day, meter, count, limit, by },
    );
    const row = { ...(this.rows.get(`${orgId}/${day}`) ?? ZERO) };
    const used = meter === 'asks' || meter === 'retrieves' ? row.asks + row.retrieves : row[meter];
    if (limit !== null && used + count > limit) return null;
    row[meter] += count;
    this.rows.set(`${orgId}/${day}`, row);
    return { ...row };
  }

  async refund(orgId: string, day: string, meter: Meter, count: number): Promise<void> {
    const row = this.rows.get(`${orgId}/${day}`);
    if (row) row[meter] = Math.max(row[meter] - count, 0);
  }

  async read(orgId: string, day: string): Promise<Counters> {
    this.reads.push({ orgId, day });
    return { ...(this.rows.get(`${orgId}/${day}`) ?? ZERO) };
  }
}

function principal(overrides: Partial<Principal> = {}): Principal {
  return testPrincipal({ orgId: ORG, orgRole: 'owner', ...overrides });
}

describe('UsageService', () => {
  let sut: UsageService;
  let repo: FakeUsageRepository;
  let directory: FakeDirectory;
  let clock: TestClock;

  beforeEach(() => {
    repo = new FakeUsageRepository();
    directory = new FakeDirectory();
    directory.org('free', ORG);
    clock = new TestClock('2031-03-14T15:09:26.535Z');
    const settings = new Settings({
      session: { secret: 'unit-test-session-secret-0123456789abcdef' },
      planLimits: parsePlanLimits({ free: { wallet: 10, imports: 3, captures: 5 }, pro: { imports: null } }),
      clock,
    });
    sut = new UsageService(repo as unknown as UsageRepository, directory, settings);
  });

  describe('report', () => {
    it('reports today’s counters against the principal’s plan limits, with the next UTC midnight', async () => {
      repo.rows.set(`${ORG}/2031-03-14`, { asks: 4, retrieves: 2, imports: 1, captures: 5 });
      repo.rows.set(`${ORG}/2031-03-13`, { asks: 9, retrieves: 9, imports: 9, captures: 9 });
      const report = await sut.report(principal());
      expect(report).toEqual({
        plan: 'free',
        mcp_queries: { used: 6, limit: 10 },
        breakdown: { asks: 4, retrieves: 2 },
        imports: { used: 1, limit: 3 },
        captures: { used: 5, limit: 5 },
        resets_at: '2031-03-15T00:00:00.000Z',
        meters: {
          asks: { used: 4, limit: 10 },
          retrieves: { used: 2, limit: 10 },
          imports: { used: 1, limit: 3 },
          captures: { used: 5, limit: 5 },
        },
      });
      expect(repo.reads).toEqual([{ orgId: ORG, day: '2031-03-14' }]);
    });

    it('reports unlimited meters as null', async () => {
      const report = await sut.report(principal({ plan: 'pro' }));

      expect(report).toMatchObject({
        plan: 'pro',
        mcp_queries: { used: 0, limit: null },
        imports: { limit: null },
        captures: { limit: 10000 },
      });
    });

    it('never charges', async () => {
      for (let i = 0; i < 10; i++) await sut.report(principal());

      expect(repo.charges).toEqual([]);
    });

    it('answers 400 naming X-Org-Id when the principal has no org', async () => {
      const report = sut.report(principal({ kind: 'session', orgId: null, orgRole: null, plan: null, scopes: [] }));

      await expect(report).rejects.toBeInstanceOf(BadRequestException);
      await expect(report).rejects.toThrow(/X-Org-Id/);
    });

    it('takes resets_at from the injected clock, at the very last millisecond of a day', async () => {
      clock.set('2031-12-31T23:59:59.999Z');

      expect((await sut.report(principal())).resets_at).toBe('2032-01-01T00:00:00.000Z');
    });
  });

  describe('charge', () => {
    it('charges today’s UTC counter of the org and returns the counters and the next reset', async () => {
      const result = await sut.charge(ORG, 'imports', 2);

      expect(result).toEqual({
        orgId: ORG,
        meter: 'imports',
        count: 2,
        day: '2031-03-14',
        used: 2,
        counters: { asks: 0, retrieves: 0, imports: 2, captures: 0 },
        resetsAt: new Date('2031-03-15T00:00:00.000Z'),
        by: { kind: 'system', credentialId: '00000000-0000-0000-0000-000000000000', userId: null },
      });
      expect(repo.charges).toEqual([{ orgId: ORG, day: '2031-03-14', meter: 'imports', count: 2, limit: 3 }]);
    });

    it('attributes a charge to the API key of the principal that made it, with the plan its verification read', async () => {
      directory.orgs.clear(); // the directory is not asked: a lookup would find no org

      const result = await sut.charge(ORG, 'captures', 1, principal({ kind: 'api_key', keyId: 'k-1', userId: 'u-1' }));

      expect(result.by).toEqual({ kind: 'api_key', credentialId: 'k-1', userId: 'u-1' });
      expect(repo.charges).toEqual([
        { orgId: ORG, day: '2031-03-14', meter: 'captures', count: 1, limit: 5, by: result.by },
      ]);
    });

    it('attributes a session’s charge to its user', async () => {
      const result = await sut.charge(ORG, 'asks', 1, principal({ kind: 'session', userId: 'u-2' }));

      expect(result.by).toEqual({ kind: 'session', credentialId: 'u-2', userId: 'u-2' });
    });

    it('charges as the system, and asks the directory for the plan, when the principal is of another org', async () => {
      directory.org('pro', 'other-org');

      const result = await sut.charge('other-org', 'imports', 1, principal({ kind: 'api_key', keyId: 'k-1' }));

      expect(result.by.kind).toBe('system');
      expect(repo.charges[0].limit).toBeNull();
    });

    it('charges one unit when no count is given', async () => {
      await sut.charge(ORG, 'captures');

      expect(repo.charges[0]).toMatchObject({ meter: 'captures', count: 1 });
    });

    it('checks asks and retrieves against the shared wallet limit, imports and captures against their own', async () => {
      for (const meter of ['asks', 'retrieves', 'imports', 'captures'] as const) await sut.charge(ORG, meter, 1);

      expect(repo.charges.map((c) => [c.meter, c.limit])).toEqual([
        ['asks', 10],
        ['retrieves', 10],
        ['imports', 3],
        ['captures', 5],
      ]);
    });

    it('passes a null limit through as unlimited', async () => {
      directory.org('pro', ORG);

      await sut.charge(ORG, 'asks', 1_000_000);

      expect(repo.charges[0].limit).toBeNull();
    });

    it('throws UsageLimitExceededError with the wallet’s use when a charge would pass the limit', async () => {
      await sut.charge(ORG, 'asks', 4);
      await sut.charge(ORG, 'retrieves', 3);

      const error = await sut.charge(ORG, 'asks', 4).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(UsageLimitExceededError);
      expect(error).toMatchObject({
        meter: 'asks',
        limit: 10,
        used: 7,
        requested: 4,
        resetsAt: new Date('2031-03-15T00:00:00.000Z'),
      });
      expect((error as Error).message).toBe(
        'Daily query wallet limit reached: 7 of 10 used, 4 more requested; resets at 2031-03-15T00:00:00.000Z',
      );
    });

    it('charges a new day after UTC midnight', async () => {
      clock.set('2031-03-14T23:59:59.999Z');
      await sut.charge(ORG, 'imports', 3);
      clock.set('2031-03-15T00:00:00.000Z');

      const result = await sut.charge(ORG, 'imports', 3);

      expect(repo.charges.map((c) => c.day)).toEqual(['2031-03-14', '2031-03-15']);
      expect(result.resetsAt).toEqual(new Date('2031-03-16T00:00:00.000Z'));
    });

    it('refuses an org the directory does not know, without touching the counters', async () => {
      await expect(sut.charge('7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', 'asks')).rejects.toBeInstanceOf(UnknownOrgError);
      expect(repo.charges).toEqual([]);
    });

    it.each([0, -1, 1.5, Number.NaN, 1_000_001])('refuses a count of %s before touching anything', async (count) => {
      await expect(sut.charge(ORG, 'asks', count)).rejects.toBeInstanceOf(RangeError);
      expect(repo.charges).toEqual([]);
    });
  });

  describe('refund', () => {
    it('gives a charge back on the day it was made, whatever the clock says now', async () => {
      clock.set('2031-03-14T23:59:59.999Z');
      const charge = await sut.charge(ORG, 'imports', 3);
      clock.set('2031-03-15T00:00:00.000Z');
      await sut.charge(ORG, 'imports', 1);

      await sut.refund(charge);

      expect(repo.rows.get(`${ORG}/2031-03-14`)?.imports).toBe(0);
      expect(repo.rows.get(`${ORG}/2031-03-15`)?.imports).toBe(1);
    });

    it('settle() waits for a refund given back through PendingRefunds until it has landed', async () => {
      const settings = new Settings({ session: { secret: 'unit-test-session-secret-0123456789abcdef' }, clock });
      let land!: () => void;
      const landing = new Promise<void>((resolve) => (land = resolve));
      const slow = Object.assign(repo, { refund: () => landing });
      const refunds = new PendingRefunds(slow as unknown as UsageRepository);
      const service = new UsageService(slow as unknown as UsageRepository, directory, settings, undefined, refunds);
      const charge = await service.charge(ORG, 'imports', 1);
      void service.refundEventually(charge);
      let settled = false;
      const settling = service.settle().then(() => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled).toBe(false);
      land();
      await settling;
    });
  });
});

describe('UsageService.report with an API key verified this turn', () => {
  it('uses the meters the verification statement read, without a second read', async () => {
    const { attachUsageSnapshot } = await import('../auth/usage-snapshot.js');
    const { Settings } = await import('../settings/settings.js');
    const { UsageService } = await import('./usage.service.js');
    const clock = { now: () => new Date('2026-03-01T10:00:00Z') };
    const settings = new Settings({ session: { secret: 'x'.repeat(32) }, clock });
    let reads = 0;
    const repo = { read: async () => (reads++, { asks: 0, retrieves: 0, imports: 0, captures: 0 }) };
    const service = new UsageService(repo as never, {} as never, settings);
    const principal = {
      kind: 'api_key',
      userId: 'u',
      email: 'e',
      orgId: 'o',
      orgRole: 'owner',
      orgMemberCount: 1,
      plan: 'free',
      scopes: ['decisions:read'],
    } as const;
    attachUsageSnapshot(principal as never, '2026-03-01', { asks: 4, retrieves: 1, imports: 2, captures: 3 });
    const report = await service.report(principal as never);
    expect(report).toMatchObject({ mcp_queries: { used: 5 }, imports: { used: 2 }, captures: { used: 3 } });
    expect(reads).toBe(0);

    // A snapshot from another day (the request straddled midnight) is not used.
    attachUsageSnapshot(principal as never, '2026-02-28', { asks: 9, retrieves: 9, imports: 9, captures: 9 });
    expect((await service.report(principal as never)).mcp_queries.used).toBe(0);
    expect(reads).toBe(1);
  });
});
