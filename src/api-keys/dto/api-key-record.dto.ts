import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { SCOPE_ENUM } from '../../common/openapi.js';
import type { Scope } from '../../common/roles.js';
import type { SetBy } from '../controls-set-by.js';
import { KEY_STATES, type KeyState } from '../key-state.js';
import { CreditRefillDto, RateWindowDto } from './key-settings.dto.js';

const SET_BY = { enum: ['owner', 'admin'] };

@ApiSchema({
  name: 'KeyControlsSetBy',
  description:
    "Who set each control the record shows (its `set_by`): `owner`, the key's owner (at mint or by `PATCH /api-keys/{keyID}`); `admin`, an owner or admin of the org (`PATCH /orgs/{org_id}/api-keys/{keyID}`, a service key's mint) or the operator. The key's owner may only narrow a control an admin set (lifting it: 403); it stays `admin` when narrowed.",
})
export class KeyControlsSetByDto {
  @ApiPropertyOptional({ ...SET_BY, description: 'Who disabled the key (present while it is disabled).' })
  enabled?: SetBy;

  @ApiPropertyOptional({ ...SET_BY, description: 'Who set `rate_limits`.' })
  rate_limits?: SetBy;

  @ApiPropertyOptional({ ...SET_BY, description: 'Who set `credits`.' })
  credits?: SetBy;

  @ApiPropertyOptional({ ...SET_BY, description: 'Who set `allowed_cidrs`.' })
  allowed_cidrs?: SetBy;

  @ApiPropertyOptional({ ...SET_BY, description: 'Who set `metadata`.' })
  metadata?: SetBy;
}

/** A key's credits as its record shows them (a request sets them as CreditsSettingDto). */
@ApiSchema({ name: 'Credits' })
export class CreditsDto {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'The balance now: credits instances have leased and not yet spent count as spent, and a refill that is due is applied.',
  })
  remaining: number;

  @ApiPropertyOptional({ type: () => CreditRefillDto, description: 'Present when the key has a refill.' })
  refill?: CreditRefillDto;

  @ApiPropertyOptional({ format: 'date-time', description: 'Present with `refill`: when the next refill happens.' })
  next_refill_at?: string;
}

/** OpenAPI description of the key record (contract 2.1); `implements` keeps it in step with the real type. */
@ApiSchema({
  name: 'ApiKey',
  description:
    'An API key record, as listed: never the key itself. Fields that do not apply yet are omitted, not null.',
})
export class ApiKeyRecordDto {
  @ApiProperty({ format: 'uuid', description: 'Key id, used for revocation.' })
  id: string;

  @ApiProperty({ format: 'uuid', description: 'The org the key is bound to and answers over.' })
  org_id: string;

  @ApiProperty({ maxLength: 100, description: 'The caller\'s label ("" when none was given).' })
  name: string;

  @ApiProperty({
    description: 'Public id as it appears inside the key: helps a person recognise it, cannot be used to authenticate.',
  })
  lookup: string;

  @ApiProperty({ minLength: 4, maxLength: 4, description: "The key's last four characters." })
  last4: string;

  @ApiProperty({
    enum: SCOPE_ENUM,
    isArray: true,
    description: 'What the key can do (as minted, or as narrowed since).',
  })
  scopes: Scope[];

  @ApiProperty({ format: 'date-time', description: 'Mint time (RFC 3339).' })
  created_at: string;

  @ApiProperty({
    enum: KEY_STATES,
    description:
      "The key's state, the one rule: `denied` (refused under the org's approval policy), `revoked`, `pending` (awaiting an owner's or admin's approval; it does not verify until then), `expired`, `disabled`, else `active`.",
  })
  state: KeyState;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Present when the key was minted with a non-zero expires_in_days; it stops verifying then.',
  })
  expires_at?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Present once the key has authenticated (updated at most once a minute).',
  })
  last_used_at?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Present once the key is revoked.' })
  revoked_at?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    description: 'Present while a rotation’s grace period runs: the replaced secret verifies until then.',
  })
  previous_secret_expires_at?: string;

  @ApiPropertyOptional({
    description: 'Present (false) while the key is disabled: it answers 401 until enabled again.',
  })
  enabled?: boolean;

  @ApiPropertyOptional({
    type: () => [RateWindowDto],
    description: 'Present when the key has its own rate windows { name, limit, window_seconds }.',
  })
  rate_limits?: RateWindowDto[];

  @ApiPropertyOptional({
    type: () => CreditsDto,
    description: 'Present when the key has credits: { remaining, refill?, next_refill_at? }.',
  })
  credits?: CreditsDto;

  @ApiPropertyOptional({ type: [String], description: 'Present when the key may be used only from these networks.' })
  allowed_cidrs?: string[];

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Present when the key has metadata.',
  })
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ maxLength: 500, description: 'Present when the key has a description.' })
  description?: string;

  @ApiPropertyOptional({
    type: () => KeyControlsSetByDto,
    description:
      'Present when the key has a control (`enabled: false`, `rate_limits`, `credits`, `allowed_cidrs`, `metadata`): who set each one shown.',
  })
  controls_set_by?: KeyControlsSetByDto;
}

@ApiSchema({ name: 'MintedApiKey', description: 'The key record plus the full key, returned exactly once, at mint.' })
export class MintedApiKeyDto extends ApiKeyRecordDto {
  @ApiProperty({
    pattern: '^svc_live_[A-Za-z0-9_]+$',
    description: 'The full key. Shown only in this response; store it now.',
  })
  key: string;
}

@ApiSchema({
  name: 'KeyOwner',
  description: 'Who owns a key: `org` for a service key (held by the org’s service account).',
})
export class KeyOwnerDto {
  @ApiProperty({ enum: ['org'] })
  type: 'org';
}

@ApiSchema({ name: 'ApiKeyList' })
export class ApiKeyListDto {
  @ApiProperty({
    type: () => ApiKeyRecordDto,
    isArray: true,
    description: 'One page (at most `limit`, default and maximum 100) of the keys the caller minted, newest first.',
  })
  keys: ApiKeyRecordDto[];

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Pass it as `?cursor=` for the next page; null on the last page. Opaque.',
  })
  next_cursor: string | null;
}

@ApiSchema({
  name: 'RotatedApiKey',
  description:
    'The key record (same id, name, org, scopes and expiry; new lookup and last4) plus the new key, returned exactly once.',
})
export class RotatedApiKeyDto extends MintedApiKeyDto {}

@ApiSchema({
  name: 'OrgApiKey',
  description: 'A key bound to the org, as its owners and admins see it. Never the key itself.',
})
export class OrgApiKeyDto extends ApiKeyRecordDto {
  @ApiProperty({ format: 'uuid', description: 'The user who minted the key.' })
  user_id: string;

  @ApiPropertyOptional({ description: "That user's e-mail." })
  owner_email?: string;

  @ApiProperty({
    enum: ['member', 'removed'],
    description: '`removed`: the owner is no longer a member of the org, so the key no longer verifies.',
  })
  owner_status: 'member' | 'removed';

  @ApiPropertyOptional({
    type: () => KeyOwnerDto,
    description: 'Service keys only: `{ "type": "org" }`, a key the org owns (`user_id` is its service account).',
  })
  owner?: KeyOwnerDto;

  @ApiPropertyOptional({ format: 'uuid', description: 'Service keys only: the owner or admin who minted it.' })
  created_by?: string;
}

@ApiSchema({ name: 'OrgApiKeyList' })
export class OrgApiKeyListDto {
  @ApiProperty({
    type: () => OrgApiKeyDto,
    isArray: true,
    description: 'Newest first; revoked and expired keys included unless filtered.',
  })
  keys: OrgApiKeyDto[];

  @ApiPropertyOptional({ description: 'Present when more keys exist: pass it as `cursor`.' })
  next_cursor?: string;
}
