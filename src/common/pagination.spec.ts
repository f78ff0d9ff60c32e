import { BadRequestException } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { queryPipe } from './validation.js';
import { decodeCursor, encodeCursor, pageOf, PageQuery } from './pagination.js';

const row = (n: number) => ({
  createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, n)),
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
});

describe('keyset pagination', () => {
  it('round-trips a position through an opaque cursor', () => {
    const position = row(7);
    expect(decodeCursor(encodeCursor(position))).toEqual(position);
  });

  it('refuses a cursor it did not mint, naming the parameter', () => {
    for (const bad of [
      '',
      'not-base64!',
      Buffer.from('{"t":"x","i":"y"}').toString('base64url'),
      Buffer.from('[]').toString('base64url'),
    ]) {
      expect(() => decodeCursor(bad)).toThrow(new BadRequestException('cursor is not a cursor this service returned'));
    }
  });

  it('trims the look-ahead row and points the next cursor at the last row kept', () => {
    const rows = [row(5), row(4), row(3)];
    expect(pageOf(rows, 3)).toEqual({ items: rows });
    const page = pageOf(rows, 2);
    expect(page.items).toEqual([row(5), row(4)]);
    expect(decodeCursor(page.nextCursor!)).toEqual(row(4));
  });

  it('parses ?limit= from the query string and bounds it to 1..100', async () => {
    const meta = { type: 'query' as const, metatype: PageQuery };
    await expect(queryPipe.transform({ limit: '25' }, meta)).resolves.toMatchObject({ limit: 25 });
    await expect(queryPipe.transform({}, meta)).resolves.toEqual({});
    for (const bad of ['0', '101', 'ten', '1.5']) {
      await expect(queryPipe.transform({ limit: bad }, meta)).rejects.toThrow(/limit must be/);
    }
  });
});
