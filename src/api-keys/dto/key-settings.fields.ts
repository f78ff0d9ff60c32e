import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { registerDecorator } from 'class-validator';
import { allowedCidrsProblem, creditsProblem, metadataProblem, rateLimitsProblem } from '../../budgets/key-settings.js';

/*
 * The per-key settings as request fields, shared by the mint body and the PATCH body: each one's
 * OpenAPI description and its rule (budgets/key-settings.ts), whose 400 names the field.
 */

export interface CreditsValue {
  remaining: number;
  refill?: { amount: number; interval: 'daily' | 'monthly'; day_of_month?: number };
}

/** A setting checked by one of key-settings.ts's rules; `null` clears it (PATCH) or sets nothing (mint). */
function KeySetting(problem: (value: unknown) => string | null): PropertyDecorator {
  const found = new WeakMap<object, string>();
  return (target, propertyName) =>
    registerDecorator({
      name: 'keySetting',
      target: target.constructor,
      propertyName: propertyName as string,
      validator: {
        validate(value: unknown, args) {
          if (value === null || value === undefined) return true;
          const message = problem(value);
          if (message) found.set(args!.object, message);
          return message === null;
        },
        defaultMessage: (args) => found.get(args!.object) ?? `${args!.property} is not valid`,
      },
    });
}

export const RateLimitsSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      nullable: true,
      maxItems: 5,
      description:
        'Up to 5 windows { name, limit (1 to 1000000000), window_seconds (1 to 86400) }. A route counts against the windows named as its window (`default` unless a host route says otherwise). Absent, null or []: no windows of its own. The plan windows (PLAN_RATE_LIMITS) apply in addition either way.',
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          limit: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
          window_seconds: { type: 'integer', minimum: 1, maximum: 86400 },
        },
        required: ['name', 'limit', 'window_seconds'],
      },
    }),
    KeySetting(rateLimitsProblem),
  );

export const CreditsSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      nullable: true,
      description:
        '{ remaining (>= 0), refill?: { amount (>= 1), interval: "daily" | "monthly", day_of_month? (1-31, monthly) } }. Every request with the key spends its cost (1 unless a host route sets another); at 0: 429 until the refill. Absent or null: no credits.',
      type: 'object',
      properties: {
        remaining: { type: 'integer', minimum: 0 },
        refill: {
          type: 'object',
          properties: {
            amount: { type: 'integer', minimum: 1 },
            interval: { type: 'string', enum: ['daily', 'monthly'] },
            day_of_month: { type: 'integer', minimum: 1, maximum: 31 },
          },
          required: ['amount', 'interval'],
        },
      },
      required: ['remaining'],
    }),
    KeySetting(creditsProblem),
  );

export const AllowedCidrsSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      nullable: true,
      type: [String],
      maxItems: 20,
      description:
        'Up to 20 IPv4/IPv6 CIDRs the key may be used from (403 elsewhere). 0.0.0.0/0 and ::/0 only explicitly; other prefixes under /8 (IPv4) or /16 (IPv6) are refused. Absent or null: anywhere.',
    }),
    KeySetting(allowedCidrsProblem),
  );

export const MetadataSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      nullable: true,
      type: 'object',
      additionalProperties: true,
      description:
        'A JSON object of at most 1 KB and 4 levels, given to host code on the principal; never on GET /me. Absent or null: none.',
    }),
    KeySetting(metadataProblem),
  );
