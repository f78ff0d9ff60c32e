import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiSchema, getSchemaPath } from '@nestjs/swagger';
import { IsBoolean, IsString, registerDecorator, ValidateIf } from 'class-validator';
import { IsStorableText, MaxStringLength, present } from '../../common/validation.js';
import {
  allowedCidrsProblem,
  creditsProblem,
  MAX_AMOUNT,
  MAX_WINDOW_LIMIT,
  MAX_WINDOW_SECONDS,
  MAX_WINDOWS,
  metadataProblem,
  rateLimitsProblem,
  WINDOW_NAME,
} from '../../budgets/key-settings.js';

/*
 * The per-key settings as request fields, declared once (KeySettingsDto at the end) for the mint
 * body and the PATCH body: each one's OpenAPI description and its rule, whose 400 names the field
 * and is worded from the rule's own limits (the JSON settings' rules are in
 * budgets/key-settings.ts, beside their enforcement). How a setting is stored is
 * key-settings.sql.ts's one mapper.
 */

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

/** One rate window of a key, as a request sets it and the key record shows it (the rule: rateLimitsProblem). */
@ApiSchema({ name: 'RateWindow' })
export class RateWindowDto {
  @ApiProperty({
    pattern: WINDOW_NAME.source,
    description:
      "Unique within the key's windows: 1 to 32 letters, digits or `_ . : -`. Routes name the window they count against.",
  })
  name: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_WINDOW_LIMIT,
    description: 'Requests (their cost) per window.',
  })
  limit: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_WINDOW_SECONDS, description: "The window's length." })
  window_seconds: number;
}

export const RateLimitsSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      nullable: true,
      maxItems: MAX_WINDOWS,
      description:
        'Up to 5 windows { name, limit (1 to 1000000000), window_seconds (1 to 86400) }. A route counts against the windows named as its window (`default` unless a host route says otherwise). Absent, null or []: no windows of its own. The plan windows (PLAN_RATE_LIMITS) apply in addition either way.',
      type: () => [RateWindowDto],
    }),
    KeySetting(rateLimitsProblem),
  );

/** A key's credit refill, as a request sets it and the key record shows it (the rule: creditsProblem). */
@ApiSchema({ name: 'CreditRefill' })
export class CreditRefillDto {
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_AMOUNT,
    description: 'The balance a refill sets: credits left over are not carried.',
  })
  amount: number;

  @ApiProperty({
    enum: ['daily', 'monthly'],
    description: 'Daily at UTC midnight, or monthly on `day_of_month` at UTC midnight.',
  })
  interval: 'daily' | 'monthly';

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 31,
    description: 'Monthly only: the day of the refill (default 1; the last day of a shorter month).',
  })
  day_of_month?: number;
}

/** A key's credits as a request sets them (the key record shows them as CreditsDto, with the next refill). */
@ApiSchema({ name: 'CreditsSetting' })
export class CreditsSettingDto {
  @ApiProperty({ type: 'integer', minimum: 0, maximum: MAX_AMOUNT, description: 'The balance.' })
  remaining: number;

  @ApiPropertyOptional({ type: () => CreditRefillDto, description: 'Absent: no refill.' })
  refill?: CreditRefillDto;
}

export const CreditsSetting = () =>
  applyDecorators(
    ApiPropertyOptional({
      description:
        '{ remaining (>= 0), refill?: { amount (>= 1), interval: "daily" | "monthly", day_of_month? (1-31, monthly) } }. Every request with the key spends its cost (1 unless a host route sets another); at 0: 429 until the refill. Absent or null: no credits.',
      // `nullable` beside a $ref lets no null through a strict validator (the $ref's own type still
      // applies), so null is a branch of its own; CreditsSettingDto is registered on KeySettingsDto.
      anyOf: [{ $ref: getSchemaPath(CreditsSettingDto) }, { type: 'object', nullable: true, enum: [null] }],
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

/** A text setting of at most `max` characters; `nullable`: null clears it (else null is a wrong type). */
const TextSetting = (max: number, description: string, nullable = false) =>
  applyDecorators(
    ApiPropertyOptional({ type: String, maxLength: max, nullable, description }),
    (target: object, field: string | symbol) => {
      const name = field as string;
      const sent = nullable ? ValidateIf((o: Record<string, unknown>) => o[name] != null) : present(name);
      sent(target, name);
      IsString({ message: `${name} must be a string` })(target, name);
      MaxStringLength(max)(target, name);
      IsStorableText()(target, name);
    },
  );

const BooleanSetting = (description: string) =>
  applyDecorators(ApiPropertyOptional({ description }), (target: object, field: string | symbol) => {
    present(field as string)(target, field);
    IsBoolean({ message: `${field as string} must be a boolean` })(target, field);
  });

/**
 * The settings of a key, as the mint (MintApiKeyDto adds its own fields) and the PATCH
 * (UpdateApiKeyDto) take them. Every field is optional; omitted: the default at mint, unchanged
 * on PATCH. A new setting is one property here (see docs/architecture.md, "Adding a key setting").
 */
@ApiExtraModels(CreditsSettingDto)
export class KeySettingsDto {
  @TextSetting(
    100,
    'Label, at most 100 characters (JavaScript string length), stored as given. Omitted: "" at mint, unchanged on PATCH.',
  )
  name?: string;

  @TextSetting(
    500,
    'Free text about the key (what it is for, who to ask), at most 500 characters. Omitted: none at mint, unchanged on PATCH; null clears it.',
    true,
  )
  description?: string | null;

  @BooleanSetting(
    'false: the key answers 401 like a revoked one until enabled again (same id, secret and history). Omitted: true at mint.',
  )
  enabled?: boolean;

  @RateLimitsSetting()
  rate_limits?: RateWindowDto[] | null;

  @CreditsSetting()
  credits?: CreditsSettingDto | null;

  @AllowedCidrsSetting()
  allowed_cidrs?: string[] | null;

  @MetadataSetting()
  metadata?: Record<string, unknown> | null;
}
