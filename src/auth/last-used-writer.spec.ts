import { describe, expect, it } from 'vitest';
import type { ApiKeyStore } from './api-key-store.js';
import { LastUsedWriter } from './last-used-writer.js';

function fakeRepository() {
  const writes: Array<{ ids: string[]; at: Date[] }> = [];
  let fail = false;
  const repo = {
    touchLastUsed: async (ids: string[], at: Date[]) => {
      if (fail) throw new Error('connection refused');
      writes.push({ ids, at });
    },
  } as unknown as ApiKeyStore;
  return { repo, writes, failNext: (v: boolean) => (fail = v) };
}

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, s));

describe('LastUsedWriter', () => {
  it('writes the first use of a key, batching many keys into one write', async () => {
    const { repo, writes } = fakeRepository();
    const w = new LastUsedWriter(repo);
    w.touch('a', null, at(0));
    w.touch('b', null, at(0));
    await w.flush();
    expect(writes).toEqual([{ ids: ['a', 'b'], at: [at(0), at(0)] }]);
  });

  it('writes a key at most once a minute, whatever the traffic', async () => {
    const { repo, writes } = fakeRepository();
    const w = new LastUsedWriter(repo);
    w.touch('a', null, at(0));
    await w.flush();
    for (let s = 1; s < 60; s++) w.touch('a', at(0), at(s));
    await w.flush();
    expect(writes).toHaveLength(1);
    w.touch('a', at(0), new Date(at(0).getTime() + 60_000));
    await w.flush();
    expect(writes).toHaveLength(2);
  });

  it('skips a key whose stored last use is under a minute old (another instance wrote it)', async () => {
    const { repo, writes } = fakeRepository();
    const w = new LastUsedWriter(repo);
    w.touch('a', at(0), at(30));
    await w.flush();
    expect(writes).toEqual([]);
  });

  it('says a use is due exactly when touch() would write it (the verifier holds only those)', async () => {
    const { repo, writes } = fakeRepository();
    const w = new LastUsedWriter(repo);
    const t = (s: number) => at(s).getTime();
    expect(w.due('a', null, t(0))).toBe(true);
    expect(w.due('a', at(0), t(30))).toBe(false);
    expect(w.due('a', at(0), t(0) + 60_000)).toBe(true);
    w.touch('a', null, at(0));
    await w.flush();
    expect(writes).toHaveLength(1);
    // Written here a second ago: not due, whatever the stored stamp said when the key was verified.
    expect(w.due('a', null, t(1))).toBe(false);
    expect(w.due('a', null, t(0) + 60_000)).toBe(true);
  });

  it('survives a failed write and tries again on the next use', async () => {
    const { repo, writes, failNext } = fakeRepository();
    const w = new LastUsedWriter(repo);
    failNext(true);
    w.touch('a', null, at(0));
    await w.flush();
    failNext(false);
    w.touch('a', null, at(1));
    await w.flush();
    expect(writes).toEqual([{ ids: ['a'], at: [at(1)] }]);
  });

  it('flushes what is pending when the application shuts down', async () => {
    const { repo, writes } = fakeRepository();
    const w = new LastUsedWriter(repo);
    w.touch('a', null, at(0));
    await w.onApplicationShutdown();
    expect(writes).toHaveLength(1);
  });
});
