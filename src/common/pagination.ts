import { BadRequestException } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { Transform } from 'class-transformer';
import { ERRORS } from './error-messages.js';

/*
 * Keyset pagination shared by every list that grows with a caller's data. Rows are ordered by
 * (created_at DESC, id DESC); the cursor is the last row's position, opaque to clients
 * (base64url of a small JSON). A repository reads `limit + 1` rows: the extra one only says that
 * another page exists. Offsets are never used: they skip or repeat rows while rows are written.
 */

export const MAX_PAGE_LIMIT = 100;

/** A position in a (created_at DESC, id DESC) ordering. */
export interface KeysetPosition {
  createdAt: Date;
  id: string;
}

export function encodeCursor(position: KeysetPosition): string {
  return Buffer.from(JSON.stringify({ t: position.createdAt.toISOString(), i: position.id })).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Decodes a cursor from a query string; anything not minted by encodeCursor is a 400 naming it. */
export function decodeCursor(cursor: string, parameter = 'cursor'): KeysetPosition {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { t?: unknown; i?: unknown };
    const createdAt = typeof parsed.t === 'string' ? new Date(parsed.t) : null;
    if (createdAt && !Number.isNaN(createdAt.getTime()) && typeof parsed.i === 'string' && UUID.test(parsed.i)) {
      return { createdAt, id: parsed.i.toLowerCase() };
    }
  } catch {
    // fall through to the 400
  }
  throw new BadRequestException(ERRORS.notOurCursor(parameter));
}

/** One page of rows read with `limit + 1`: trims the extra row and says where the next page starts. */
export function pageOf<T extends KeysetPosition>(rows: T[], limit: number): { items: T[]; nextCursor?: string } {
  if (rows.length <= limit) return { items: rows };
  const items = rows.slice(0, limit);
  return { items, nextCursor: encodeCursor(items[items.length - 1]) };
}

const toInt = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : value;

/** `?limit=&cursor=` for a paginated list (query strings arrive as strings: the limit is parsed here). */
export class PageQuery {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_LIMIT,
    description: `Rows per page, 1 to ${MAX_PAGE_LIMIT} (${MAX_PAGE_LIMIT} when omitted).`,
  })
  @IsOptional()
  @Transform(toInt)
  @IsInt({ message: 'limit must be an integer' })
  @Min(1, { message: `limit must be between 1 and ${MAX_PAGE_LIMIT}` })
  @Max(MAX_PAGE_LIMIT, { message: `limit must be between 1 and ${MAX_PAGE_LIMIT}` })
  limit?: number;

  @ApiPropertyOptional({ description: 'The `next_cursor` of the previous page; opaque.' })
  @IsOptional()
  @IsString({ message: 'cursor must be a string' })
  @MaxLength(512, { message: 'cursor must be at most 512 characters' })
  cursor?: string;
}
