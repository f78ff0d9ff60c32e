import { describe, expect, it } from 'vitest';
import type { EntityManager } from 'typeorm';
import { FakeDirectory, TestClock, testSettings } from '../../test/support/factories.js';
import { runWithRequestOrigin } from '../common/request-context.js';
import type { AuditRepository, NewAuditRow } from './audit.repository.js';
import { AuditService, type AuditEntry } from './audit.service.js';

const ORG = '7c1e2d3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';
const USER = '5a0f6a8e-1b7c-4d2e-9f3a-0c1d2e3f4a5b';
const KEY = '3f2e1d0c-9b8a-4766-a554-433221100fed';
const AT = new Date('2030-01-02T03:04:05.678Z');

class FakeAuditRepository {
  readonly rows: NewAuditRow[] = [];
  pruned: Array<{ before: Date; batch: number }> = [];
  pruneResults: number[] = [];
  async insert(_m: EntityManager, row: NewAuditRow): Promise<void> {
    this.rows.push(row);
  }
  async pruneBatch(before: Date, batch: number): Promise<number> {
    this.pruned.push({ before, batch });
    return this.pruneResults.shift() ?? 0;
  }
}

function setup(retentionDays?: number) {
  const repo = new FakeAuditRepository();
  const settings = testSettings({ clock: new TestClock(AT), auditRetentionDays: retentionDays });
  const sut = new AuditService(repo as unknown as AuditRepository, new FakeDirectory(), settings);
  return { repo, sut };
}

const entry = (over: Partial<AuditEntry> = {}): AuditEntry => ({
  orgId: ORG,
  action: 'api_key.revoked',
  actor: { type: 'user', id: USER },
  credential: { type: 'session', id: null },
  target: { type: 'api_key', id: KEY },
  details: { name: 'ci' },
  ...over,
});

describe('AuditService.record', () => {
  it("stamps the clock's time and the request's origin when there is one", async () => {
    const { repo, sut } = setup();
    await runWithRequestOrigin({ clientAddress: '203.0.113.7', userAgent: 'curl/8', requestId: 'req-1' }, () =>
      sut.record({} as EntityManager, entry()),
    );
    expect(repo.rows[0]).toEqual({
      createdAt: AT,
      orgId: ORG,
      action: 'api_key.revoked',
      actorType: 'user',
      actorId: USER,
      actorSource: null,
      credentialType: 'session',
      credentialId: null,
      targetType: 'api_key',
      targetId: KEY,
      clientAddress: '203.0.113.7',
      userAgent: 'curl/8',
      requestId: 'req-1',
      details: { name: 'ci' },
    });
  });

  it('leaves the origin empty outside a request (CLI, jobs)', async () => {
    const { repo, sut } = setup();
    await sut.record(
      {} as EntityManager,
      entry({ actor: { type: 'operator', id: null, source: 'cli' }, credential: undefined }),
    );
    expect(repo.rows[0]).toMatchObject({
      actorType: 'operator',
      actorId: null,
      actorSource: 'cli',
      credentialType: null,
      clientAddress: null,
      userAgent: null,
      requestId: null,
    });
  });

  it('never stores a secret in details: secret-named fields and credential-shaped text are redacted', async () => {
    const { repo, sut } = setup();
    const key = 'svc_live_YguRbYLvsx9A_8b8g5JZWZSOlorO1EmD8wwOurInRuisQ2VCuua';
    await sut.record(
      {} as EntityManager,
      entry({
        details: {
          key,
          secret: 'x',
          key_hash: 'y',
          note: `leaked ${key} here`,
          nested: { token: 't' },
          lookup: 'YguRbYLvsx9A',
        },
      }),
    );
    expect(repo.rows[0].details).toEqual({
      key: '[REDACTED]',
      secret: '[REDACTED]',
      key_hash: '[REDACTED]',
      note: 'leaked [REDACTED] here',
      nested: { token: '[REDACTED]' },
      lookup: 'YguRbYLvsx9A',
    });
  });

  it('mends details that cannot be stored rather than fail the change', async () => {
    const { repo, sut } = setup();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await sut.record({} as EntityManager, entry({ details: cyclic }));
    await sut.record({} as EntityManager, entry({ details: { big: 'x'.repeat(5000) } }));
    await sut.record({} as EntityManager, entry({ details: { name: 'a\u0000b\uD800', n: 10n as unknown as number } }));
    expect(repo.rows.map((r) => r.details)).toEqual([
      { unserialisable: true },
      { truncated: true },
      { name: 'a\uFFFDb\uFFFD', n: '10' },
    ]);
  });

  it('skips (and does not throw for) an entry whose ids are not UUIDs', async () => {
    const { repo, sut } = setup();
    await expect(
      sut.record({} as EntityManager, entry({ target: { type: 'api_key', id: 'nope' } })),
    ).resolves.toBeUndefined();
    expect(repo.rows).toEqual([]);
  });

  it('fails when the database fails, so the change fails with it', async () => {
    const { repo, sut } = setup();
    repo.insert = async () => {
      throw Object.assign(new Error('connection terminated'), { code: '57P01' });
    };
    await expect(sut.record({} as EntityManager, entry())).rejects.toThrow('connection terminated');
  });
});

describe('AuditService.prune', () => {
  it('deletes in bounded batches until a batch comes back short', async () => {
    const { repo, sut } = setup();
    repo.pruneResults = [10, 10, 3];
    expect(await sut.prune(10, 100)).toBe(23);
    expect(repo.pruned).toHaveLength(3);
    expect(repo.pruned[0]).toEqual({ before: new Date(AT.getTime() - 400 * 86_400_000), batch: 10 });
  });

  it('stops after the most batches one run may take', async () => {
    const { repo, sut } = setup(30);
    repo.pruneResults = Array<number>(10).fill(5);
    expect(await sut.prune(5, 4)).toBe(20);
    expect(repo.pruned).toHaveLength(4);
    expect(repo.pruned[0].before).toEqual(new Date(AT.getTime() - 30 * 86_400_000));
  });

  it('keeps everything when retention is 0', async () => {
    const { repo, sut } = setup(0);
    expect(await sut.prune()).toBe(0);
    expect(repo.pruned).toEqual([]);
  });
});
