import { describe, expect, it } from 'vitest';
import { parseInvalidation } from './coherence.sql.js';

describe('parseInvalidation', () => {
  it('reads the sequence number and what a change names', () => {
    expect(parseInvalidation('{"s": 7, "k": null, "u": "u1", "o": "o1"}')).toEqual({
      seq: 7,
      targets: { keyId: null, userId: 'u1', orgId: 'o1' },
    });
  });

  it('reads a TRUNCATE as "drop everything", keeping its sequence number to acknowledge', () => {
    expect(parseInvalidation('{"s": 8, "a": true}')).toEqual({ seq: 8, targets: null });
  });

  it('drops everything rather than guess when a payload cannot be read', () => {
    expect(parseInvalidation('not json')).toEqual({ seq: 0, targets: null });
    expect(parseInvalidation(undefined)).toEqual({ seq: 0, targets: null });
  });
});
