import { describe, expect, it } from 'vitest';
import type { ApiKeyStore, ScopeUse } from './api-key-store.js';
import { ScopeUsageRecorder } from './scope-usage-recorder.js';

function fakeStore() {
  const writes: ScopeUse[][] = [];
  let fail = false;
  const store = {
    recordScopeUse: async (uses: ScopeUse[]) => {
      if (fail) throw new Error('connection refused');
      writes.push(uses);
    },
  } as unknown as ApiKeyStore;
  return { store, writes, failNext: (v: boolean) => (fail = v) };
}

const at = (iso: string) => new Date(iso);

describe('ScopeUsageRecorder', () => {
  it('adds up a batch per key, scope and UTC day, the last use kept, in one write', async () => {
    const { store, writes } = fakeStore();
    const r = new ScopeUsageRecorder(store);
    r.record('k1', ['a:read', 'a:write'], at('2026-05-01T23:59:58Z'));
    r.record('k1', ['a:read'], at('2026-05-01T23:59:59Z'));
    r.record('k1', ['a:read'], at('2026-05-02T00:00:01Z'));
    r.record('k2', ['a:read'], at('2026-05-02T00:00:02Z'));
    await r.flush();
    expect(writes).toHaveLength(1);
    expect(writes[0]).toEqual([
      { keyId: 'k1', scope: 'a:read', day: '2026-05-01', requests: 2, lastUsedAt: at('2026-05-01T23:59:59Z') },
      { keyId: 'k1', scope: 'a:write', day: '2026-05-01', requests: 1, lastUsedAt: at('2026-05-01T23:59:58Z') },
      { keyId: 'k1', scope: 'a:read', day: '2026-05-02', requests: 1, lastUsedAt: at('2026-05-02T00:00:01Z') },
      { keyId: 'k2', scope: 'a:read', day: '2026-05-02', requests: 1, lastUsedAt: at('2026-05-02T00:00:02Z') },
    ]);
  });

  it('writes nothing per request: a second of requests is one write, started by a timer', async () => {
    const { store, writes } = fakeStore();
    const r = new ScopeUsageRecorder(store);
    for (let i = 0; i < 500; i++) r.record('k1', ['a:read'], at('2026-05-01T12:00:00Z'));
    expect(writes).toHaveLength(0);
    await expect.poll(() => writes.length, { timeout: 3000 }).toBe(1);
    expect(writes[0][0].requests).toBe(500);
  });

  it('drops a batch the database refuses (never failing a request), and drains what is pending at shutdown', async () => {
    const { store, writes, failNext } = fakeStore();
    const r = new ScopeUsageRecorder(store);
    failNext(true);
    r.record('k1', ['a:read'], at('2026-05-01T12:00:00Z'));
    await r.flush();
    failNext(false);
    r.record('k2', ['a:read'], at('2026-05-01T12:00:00Z'));
    await r.onApplicationShutdown();
    expect(writes.map((w) => w.map((u) => u.keyId))).toEqual([['k2']]);
  });
});
