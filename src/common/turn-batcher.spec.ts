import { describe, expect, it } from 'vitest';
import { TurnBatcher } from './turn-batcher.js';

describe('TurnBatcher', () => {
  it('answers every request of one turn from a single load, each with its own value', async () => {
    const loads: string[][] = [];
    const b = new TurnBatcher<string, number>(async (keys) => {
      loads.push(keys);
      return new Map(keys.filter((k) => k !== 'missing').map((k) => [k, k.length]));
    }, (k) => k);
    const answers = await Promise.all(['a', 'bb', 'a', 'missing', 'ccc'].map((k) => b.load(k)));
    expect(answers).toEqual([1, 2, 1, undefined, 3]);
    expect(loads).toEqual([['a', 'bb', 'missing', 'ccc']]);
  });

  it('puts a request that arrives while a load is in flight into the next load, never the running one', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loads: string[][] = [];
    let version = 1;
    const b = new TurnBatcher<string, number>(async (keys) => {
      loads.push(keys);
      const seen = version;
      if (loads.length === 1) await gate;
      return new Map(keys.map((k) => [k, seen]));
    }, (k) => k);
    const first = b.load('k');
    await new Promise((r) => setImmediate(r)); // the first load has started
    version = 2; // e.g. a revoke commits now
    const second = b.load('k');
    release();
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(loads).toEqual([['k'], ['k']]);
  });

  it('fails only the requests of a failed load', async () => {
    let fail = true;
    const b = new TurnBatcher<string, string>(async (keys) => {
      if (fail) throw new Error('connection refused');
      return new Map(keys.map((k) => [k, k]));
    }, (k) => k);
    const failed = Promise.all([b.load('a'), b.load('b')]);
    await expect(failed).rejects.toThrow('connection refused');
    fail = false;
    expect(await b.load('a')).toBe('a');
  });

  it('with maxInFlight 1, holds what arrives during a load and sends it all as the next load', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loads: string[][] = [];
    const b = new TurnBatcher<string, string>(async (keys) => {
      loads.push(keys);
      if (loads.length === 1) await gate;
      return new Map(keys.map((k) => [k, k]));
    }, (k) => k, 1);
    const first = b.load('a');
    await new Promise((r) => setImmediate(r));
    const later = [b.load('b')];
    await new Promise((r) => setImmediate(r)); // a second turn: unbounded, this would be a load of its own
    later.push(b.load('c'));
    await new Promise((r) => setImmediate(r));
    expect(loads).toEqual([['a']]);

    release();

    expect(await Promise.all([first, ...later])).toEqual(['a', 'b', 'c']);
    expect(loads).toEqual([['a'], ['b', 'c']]);
  });
});
