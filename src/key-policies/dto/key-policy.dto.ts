import { ApiProperty, ApiPropertyOptional, ApiSchema, type ApiPropertyOptions } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsBoolean, IsInt, IsObject, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { SCOPE_ENUM } from '../../common/openapi.js';
import type { Role, Scope } from '../../common/roles.js';
import { present } from '../../common/validation.js';
import { MAX_LIFETIME_DAYS, STALE_AFTER_DAYS } from '../key-policy-limits.js';

/** Validated when given and not null (null and omitted both mean "no such rule"). */
const given = (field: string) =>
  ValidateIf((o: Record<string, unknown>) => o[field] !== undefined && o[field] !== null);

const ScopeList =
  (field: string): PropertyDecorator =>
  (target, key) => {
    // Registered scopes only: the service checks each against the running registry (400 naming it).
    IsArray({ message: `${field} must be an array of scopes` })(target, key);
  };
const SCOPE_LIST = { enum: SCOPE_ENUM, isArray: true } as const;
const SCOPE_ARRAY = { type: 'array' as const, items: { type: 'string' as const, enum: [...SCOPE_ENUM] } };
/** Inline, not a $ref: OpenAPI 3.0 cannot mark a referenced schema nullable. */
const BY_ROLE_SCHEMA = {
  type: 'object',
  nullable: true,
  additionalProperties: false,
  properties: { owner: SCOPE_ARRAY, admin: SCOPE_ARRAY, member: SCOPE_ARRAY, viewer: SCOPE_ARRAY },
} as ApiPropertyOptions;

/** Per role, the scopes its members may grant a key (a role left out keeps its ceiling). Validation only: its OpenAPI schema is BY_ROLE_SCHEMA. */
export class AllowedScopesByRoleDto implements Partial<Record<Role, Scope[]>> {
  @present('owner')
  @ScopeList('allowed_scopes_by_role.owner')
  owner?: Scope[];

  @present('admin')
  @ScopeList('allowed_scopes_by_role.admin')
  admin?: Scope[];

  @present('member')
  @ScopeList('allowed_scopes_by_role.member')
  member?: Scope[];

  @present('viewer')
  @ScopeList('allowed_scopes_by_role.viewer')
  viewer?: Scope[];
}

const LIFETIME = `max_lifetime_days must be null or an integer from ${MAX_LIFETIME_DAYS.min} to ${MAX_LIFETIME_DAYS.max}`;
const STALE = `stale_after_days must be null or an integer from ${STALE_AFTER_DAYS.min} to ${STALE_AFTER_DAYS.max}`;

/**
 * PUT /orgs/{org_id}/key-policy: the whole policy (PUT replaces it; an omitted field is its
 * default: no rule). Unknown fields are refused (400).
 */
@ApiSchema({
  name: 'KeyPolicyRequest',
  description:
    'The whole policy: an omitted field takes its default (null or false: no rule). Unknown fields are refused (400).',
})
export class KeyPolicyDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: MAX_LIFETIME_DAYS.min,
    maximum: MAX_LIFETIME_DAYS.max,
    nullable: true,
    description:
      'Mints and rotations need an expiry of at most this many days; existing keys stop verifying this many days after their creation. Null: no limit.',
  })
  @given('max_lifetime_days')
  @IsInt({ message: LIFETIME })
  @Min(MAX_LIFETIME_DAYS.min, { message: LIFETIME })
  @Max(MAX_LIFETIME_DAYS.max, { message: LIFETIME })
  max_lifetime_days?: number | null;

  @ApiPropertyOptional({ description: 'Every mint must give expires_in_days (1 or more). Default false.' })
  @present('require_expiry')
  @IsBoolean({ message: 'require_expiry must be a boolean' })
  require_expiry?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: STALE_AFTER_DAYS.min,
    maximum: STALE_AFTER_DAYS.max,
    nullable: true,
    description: 'Keys unused for this many days are revoked (warned 7 days before). Null: never.',
  })
  @given('stale_after_days')
  @IsInt({ message: STALE })
  @Min(STALE_AFTER_DAYS.min, { message: STALE })
  @Max(STALE_AFTER_DAYS.max, { message: STALE })
  stale_after_days?: number | null;

  @ApiPropertyOptional({
    ...BY_ROLE_SCHEMA,
    description:
      'Narrows what each role may grant its keys (a role left out keeps its ceiling; unknown roles are refused). Null: each role its ceiling.',
  })
  @given('allowed_scopes_by_role')
  @IsObject({ message: 'allowed_scopes_by_role must be an object of role: scopes' })
  @ValidateNested()
  @Type(() => AllowedScopesByRoleDto)
  allowed_scopes_by_role?: AllowedScopesByRoleDto | null;

  @ApiPropertyOptional({
    ...SCOPE_LIST,
    nullable: true,
    description:
      "A member's or viewer's mint asking for any of these scopes waits for an owner's or admin's approval. Null or []: none.",
  })
  @given('approval_required_for')
  @ScopeList('approval_required_for')
  approval_required_for?: Scope[] | null;
}

/** The org's key policy as GET and PUT answer it: every field present (null or false: no rule). */
@ApiSchema({ name: 'KeyPolicy' })
export class KeyPolicyRecordDto {
  @ApiProperty({ type: 'integer', nullable: true })
  max_lifetime_days: number | null;

  @ApiProperty()
  require_expiry: boolean;

  @ApiProperty({ type: 'integer', nullable: true })
  stale_after_days: number | null;

  @ApiProperty(BY_ROLE_SCHEMA)
  allowed_scopes_by_role: AllowedScopesByRoleDto | null;

  @ApiProperty({ ...SCOPE_LIST, nullable: true })
  approval_required_for: Scope[] | null;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'When the policy was last set; absent while the org has never set one.',
  })
  updated_at?: string;
}
