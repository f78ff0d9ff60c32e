import { describe, expect, it } from 'vitest';
import { isStorableText, toStorableText } from './storable-text.js';

describe('storable text', () => {
  it('refuses NUL and unpaired surrogates, and accepts a surrogate pair', () => {
    expect(['a\u0000b', 'x\uD800', '\uDC00y', 'a\uD800b'].map(isStorableText)).toEqual([false, false, false, false]);
    expect(['plain', 'emoji \uD83D\uDE00', ''].map(isStorableText)).toEqual([true, true, true]);
  });

  it('gives the same answer on every call (the shared pattern is global, its position is reset)', () => {
    expect([isStorableText('a\u0000'), isStorableText('a\u0000'), isStorableText('ok')]).toEqual([false, false, true]);
  });

  it('replaces each unstorable character with U+FFFD and keeps the rest', () => {
    expect(toStorableText('a\u0000b\uD800 \uD83D\uDE00')).toBe('a\uFFFDb\uFFFD \uD83D\uDE00');
  });
});
