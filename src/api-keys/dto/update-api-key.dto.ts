import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsBoolean, IsString, registerDecorator, ValidateIf } from 'class-validator';
import { allowedCidrsProblem, creditsProblem, metadataProblem, rateLimitsProblem } from '../../auth/key-limits/key-settings.js';
import { IsStorableText, MaxStringLength } from '../../common/validation.js';

const present = (field: string) => ValidateIf((o: Record<string, unknown>) => o[field] !== undefined);

/** A setting checked by one of key-settings.ts's rules; `null` clears it. The 400 names the field and the rule. */
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

/** PATCH /api-keys/{keyID} and PATCH /orgs/{org_id}/api-keys/{keyID}: only the fields sent change. */
@ApiSchema({ name: 'UpdateApiKeyRequest', description: 'The settings to change; omitted fields stay as they are, null clears a setting. Unknown fields are refused (400).' })
export class UpdateApiKeyDto {
  @ApiPropertyOptional({ maxLength: 100 })
  @present('name')
  @IsString({ message: 'name must be a string' })
  @MaxStringLength(100)
  @IsStorableText()
  name?: string;

  @ApiPropertyOptional({ description: 'false: the key answers 401 like a revoked one until enabled again (same id, secret and history).' })
  @present('enabled')
  @IsBoolean({ message: 'enabled must be a boolean' })
  enabled?: boolean;

  @ApiPropertyOptional({
    nullable: true,
    maxItems: 5,
    description: 'Up to 5 windows { name, limit (>= 1), window_seconds (1 to 86400) }. A route counts against the windows named as its window (`default` unless a host route says otherwise). null: the plan default applies.',
    type: 'array',
    items: { type: 'object', properties: { name: { type: 'string' }, limit: { type: 'integer', minimum: 1 }, window_seconds: { type: 'integer', minimum: 1, maximum: 86400 } }, required: ['name', 'limit', 'window_seconds'] },
  })
  @KeySetting(rateLimitsProblem)
  rate_limits?: unknown[] | null;

  @ApiPropertyOptional({
    nullable: true,
    description: '{ remaining (>= 0), refill?: { amount (>= 1), interval: "daily" | "monthly", day_of_month? (1-31, monthly) } }. Every request with the key spends its cost (1 unless a host route sets another); at 0: 429 until the refill. null: no credits.',
    type: 'object',
    properties: {
      remaining: { type: 'integer', minimum: 0 },
      refill: { type: 'object', properties: { amount: { type: 'integer', minimum: 1 }, interval: { type: 'string', enum: ['daily', 'monthly'] }, day_of_month: { type: 'integer', minimum: 1, maximum: 31 } }, required: ['amount', 'interval'] },
    },
    required: ['remaining'],
  })
  @KeySetting(creditsProblem)
  credits?: { remaining: number; refill?: { amount: number; interval: 'daily' | 'monthly'; day_of_month?: number } } | null;

  @ApiPropertyOptional({ nullable: true, type: [String], maxItems: 20, description: 'Up to 20 IPv4/IPv6 CIDRs the key may be used from (403 elsewhere). 0.0.0.0/0 and ::/0 only explicitly; other prefixes under /8 (IPv4) or /16 (IPv6) are refused. null: anywhere.' })
  @KeySetting(allowedCidrsProblem)
  allowed_cidrs?: string[] | null;

  @ApiPropertyOptional({ nullable: true, type: 'object', additionalProperties: true, description: 'A JSON object of at most 1 KB and 4 levels, given to host code on the principal; never on GET /me. null: none.' })
  @KeySetting(metadataProblem)
  metadata?: Record<string, unknown> | null;
}
