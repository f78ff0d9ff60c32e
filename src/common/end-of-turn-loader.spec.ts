import { describe, expect, it } from 'vitest';
import { endOfTurnLoader } from './end-of-turn-loader.js';

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('endOfTurnLoader', () => {
  it('sends what one turn asked for as one batch, and each load gets its own answer', async () => {
    const batches: number[][] = [];
    const loader = endOfTurnLoader<number, number>(async (keys) => (batches.push([...keys]), keys.map((k) => k * 10)));
    expect(await Promise.all([loader.load(1), loader.load(2), loader.load(2)])).toEqual([10, 20, 20]);
    expect(batches).toEqual([[1, 2, 2]]);
  });

  it('with one batch in flight, sends what arrived meanwhile as one batch the moment it finishes, before its callers go on', async () => {
    const events: string[] = [];
    const gates: Array<ReturnType<typeof deferred<number[]>>> = [];
    const loader = endOfTurnLoader<number, number>((keys) => {
      events.push(`batch ${keys.join(',')}`);
      const gate = deferred<number[]>();
      gates.push(gate);
      return gate.promise;
    }, 1);
    const first = loader.load(1).then((v) => events.push(`answer ${v}`));
    await turn();
    const later = [loader.load(2), loader.load(3)];
    await turn();
    await turn();
    expect(events).toEqual(['batch 1']);
    gates[0].resolve([100]);
    await first;
    // The waiting batch left before the first batch's caller continued.
    expect(events).toEqual(['batch 1', 'batch 2,3', 'answer 100']);
    gates[1].resolve([200, 300]);
    expect(await Promise.all(later)).toEqual([200, 300]);
  });

  it('fails only the loads of a batch that failed', async () => {
    let calls = 0;
    const loader = endOfTurnLoader<number, number>(async (keys) => {
      if (calls++ === 0) throw new Error('down');
      return keys.map((k) => k);
    }, 1);
    await expect(loader.load(1)).rejects.toThrow('down');
    expect(await loader.load(2)).toBe(2);
  });

  it('tries the items of a batch PostgreSQL refuses for one value (SQLSTATE class 22/23) one by one: only that item fails', async () => {
    const batches: number[][] = [];
    const loader = endOfTurnLoader<number, number>(async (keys) => {
      batches.push([...keys]);
      if (keys.includes(13)) throw Object.assign(new Error('value out of range for type integer'), { code: '22003' });
      return keys.map((k) => k * 10);
    });
    const answers = await Promise.allSettled([loader.load(1), loader.load(13), loader.load(2)]);
    expect(answers.map((a) => (a.status === 'fulfilled' ? a.value : (a.reason as Error).message))).toEqual([
      10,
      'value out of range for type integer',
      20,
    ]);
    expect(batches).toEqual([[1, 13, 2], [1], [13], [2]]);
  });

  it('fails the whole batch for any other error (a connection lost is everyone’s)', async () => {
    let calls = 0;
    const loader = endOfTurnLoader<number, number>(async () => {
      calls++;
      throw Object.assign(new Error('connection terminated'), { code: '08006' });
    });
    const answers = await Promise.allSettled([loader.load(1), loader.load(2)]);
    expect(answers.every((a) => a.status === 'rejected')).toBe(true);
    expect(calls).toBe(1);
  });
});
