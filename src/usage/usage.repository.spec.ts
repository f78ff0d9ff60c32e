import type { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { Settings } from '../settings/settings.js';
import type { Attribution } from '../common/meters.js';
import { UsageRepository, type ChargeRequest } from './usage.repository.js';

const by: Attribution = { kind: 'api_key', credentialId: '00000000-0000-0000-0000-000000000001', userId: null };
const request = (orgId: string, count = 1): ChargeRequest => ({
  orgId,
  day: '2031-03-14',
  meter: 'asks',
  count,
  limit: 100,
  plan: 'free',
  limits: { wallet: 100, imports: 10, captures: 100 },
  by,
});

/** A pool whose kui_charge_batch passes every charge but the ones of org "refused", answering when told to. */
function fakePool() {
  const batches: string[][] = [];
  const pending: Array<() => void> = [];
  let running = 0;
  let maxRunning = 0;
  const query = (config: { name: string; values: unknown[] }) => {
    const orgs = config.values[0] as string[];
    batches.push(orgs);
    running++;
    maxRunning = Math.max(maxRunning, running);
    return new Promise((resolve) =>
      pending.push(() => {
        running--;
        const rows = orgs
          .map((org, i) => ({ org, idx: i + 1 }))
          .filter((c) => c.org !== 'refused')
          .map((c) => ({ idx: c.idx, r_asks: c.idx, r_retrieves: 0, r_imports: 0, r_captures: 0 }));
        resolve({ rows });
      }),
    );
  };
  const db = { options: { type: 'postgres' }, driver: { master: { query } } } as unknown as DataSource;
  return {
    db,
    batches,
    release: () => pending.shift()?.(),
    get maxRunning() {
      return maxRunning;
    },
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('UsageRepository.charge batching', () => {
  it('sends the charges of one turn as one batch in arrival order, and answers each with its own row (null when refused)', async () => {
    const pool = fakePool();
    const repo = new UsageRepository(pool.db, new Settings({ session: { secret: 'x'.repeat(32) } }));

    const answers = Promise.all([
      repo.charge(request('a')),
      repo.charge(request('refused')),
      repo.charge(request('b')),
    ]);
    await turn();
    pool.release();

    expect(pool.batches).toEqual([['a', 'refused', 'b']]);
    expect((await answers).map((c) => c?.asks ?? null)).toEqual([1, null, 3]);
  });

  it('keeps one batch in flight: what arrives meanwhile waits and goes as one larger batch', async () => {
    const pool = fakePool();
    const repo = new UsageRepository(pool.db, new Settings({ session: { secret: 'x'.repeat(32) } }));

    const first = repo.charge(request('a'));
    await turn();
    const later = [repo.charge(request('b'))];
    await turn();
    later.push(repo.charge(request('c')));
    await turn();
    expect(pool.batches).toEqual([['a']]);

    pool.release();
    await first;
    await turn();
    pool.release();
    await Promise.all(later);

    expect(pool.batches).toEqual([['a'], ['b', 'c']]);
    expect(pool.maxRunning).toBe(1);
  });
});
