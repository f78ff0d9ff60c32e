import { describe, expect, it } from 'vitest';
import { availableAt, dueAt, wholeBackAt } from './sliding-window.js';

/** A window of 10 a second, its fixed window starting at 0. */
describe('the sliding-window counter', () => {
  it('makes available the limit less the weighted previous count and the current one', () => {
    expect(availableAt(10, 1000, 0, 8, 1, 0)).toBe(1);
    expect(availableAt(10, 1000, 0, 8, 1, 500)).toBe(5);
    // In the next fixed window the current count weighs as the previous one; after it, nothing.
    expect(availableAt(10, 1000, 0, 8, 4, 1250)).toBe(7);
    expect(availableAt(10, 1000, 0, 8, 4, 2000)).toBe(10);
  });

  it('says when a cost is available: later in this window, or in the next one', () => {
    // 8 previous, 1 current: 1 more fits at once, 2 once the previous weighs 7 (at 125 ms).
    expect(dueAt(10, 1000, 0, 8, 1, 1)).toBe(0);
    expect(dueAt(10, 1000, 0, 8, 1, 2)).toBe(125);
    // All 10 counted now: in the next window they weigh 9 at 100 ms.
    expect(dueAt(10, 1000, 0, 3, 10, 1)).toBe(1100);
    expect(dueAt(10, 1000, 0, 0, 0, 1)).toBe(0);
  });

  it('says when nothing counted weighs on the window any more', () => {
    expect(wholeBackAt(1000, 0, 3, 1)).toBe(2000);
    expect(wholeBackAt(1000, 0, 3, 0)).toBe(1000);
    expect(wholeBackAt(1000, 0, 0, 0)).toBe(0);
  });
});
