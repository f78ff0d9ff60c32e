import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ApiKeyRecordDto } from '../../api-keys/dto/api-key-record.dto.js';
import { AuditEventDto } from '../../audit/dto/audit-event.dto.js';
import { ROLES } from '../../common/roles.js';

@ApiSchema({
  name: 'UserErasure',
  description: 'What an erasure did. A second run answers the same with nothing left to do (0 and []).',
})
export class ErasureDto {
  @ApiProperty({ format: 'uuid' })
  user_id: string;

  @ApiProperty({ description: 'The tombstone that replaced the e-mail: `erased-<user_id>@erased.invalid`.' })
  email: string;

  @ApiProperty({ type: 'integer', description: 'Keys revoked by this run.' })
  keys_revoked: number;

  @ApiProperty({
    type: 'string',
    format: 'uuid',
    isArray: true,
    description: 'Orgs left by this run (each has a `user.erased` audit event).',
  })
  orgs_left: string[];

  @ApiProperty({
    type: 'integer',
    description: 'Audit events rewritten by this run (the id replaced by the pseudonym, the e-mail removed).',
  })
  audit_events_pseudonymised: number;
}

@ApiSchema({ name: 'PersonalDataUser' })
class ExportedUserDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() email: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}

@ApiSchema({ name: 'PersonalDataMembership' })
class ExportedMembershipDto {
  @ApiProperty({ format: 'uuid' }) org_id: string;
  @ApiProperty() org_name: string;
  @ApiProperty({ enum: ROLES }) role: string;
  @ApiProperty({ format: 'date-time' }) joined_at: string;
}

@ApiSchema({ name: 'PersonalDataWorkspace' })
class ExportedWorkspaceDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) org_id: string;
  @ApiProperty({ format: 'date-time' }) created_at: string;
}

@ApiSchema({
  name: 'PersonalDataUsage',
  description: "One day's charges in one org by one of the person's credentials.",
})
class ExportedUsageDto {
  @ApiProperty({ format: 'uuid' }) org_id: string;
  @ApiProperty({ format: 'date' }) day: string;
  @ApiProperty({ enum: ['api_key', 'session'] }) credential_kind: string;
  @ApiProperty({ format: 'uuid', description: "The key's id, or the user's id for a session." }) credential_id: string;
  @ApiProperty({ type: 'integer' }) asks: number;
  @ApiProperty({ type: 'integer' }) retrieves: number;
  @ApiProperty({ type: 'integer' }) imports: number;
  @ApiProperty({ type: 'integer' }) captures: number;
}

@ApiSchema({
  name: 'PersonalDataMeterUsage',
  description: "One day's charges of one of the deployment's own meters in one org by one of the person's credentials.",
})
class ExportedMeterUsageDto {
  @ApiProperty({ format: 'uuid' }) org_id: string;
  @ApiProperty({ format: 'date' }) day: string;
  @ApiProperty({ enum: ['api_key', 'session'] }) credential_kind: string;
  @ApiProperty({ format: 'uuid', description: "The key's id, or the user's id for a session." }) credential_id: string;
  @ApiProperty({ description: 'The meter, as the deployment defines it.' }) meter: string;
  @ApiProperty({ type: 'integer' }) used: number;
}

/**
 * A key of the person in the export: the key record with its state in every API version (the
 * versioned ApiKey schema of older versions has none).
 */
@ApiSchema({
  name: 'PersonalDataApiKey',
  description: 'A key of the user as the key list shows it (masked: never a secret or a hash), with its state.',
})
class ExportedApiKeyDto extends ApiKeyRecordDto {}

/** The export's shape for OpenAPI; the document itself is written in pieces (PersonalDataService.exportDocument). */
@ApiSchema({ name: 'PersonalDataExport', description: 'Everything the service holds about one user.' })
export class PersonalDataExportDto {
  @ApiProperty({ format: 'date-time' }) exported_at: string;
  @ApiProperty({ type: () => ExportedUserDto }) user: ExportedUserDto;
  @ApiProperty({ type: () => ExportedMembershipDto, isArray: true }) memberships: ExportedMembershipDto[];
  @ApiProperty({ type: () => ExportedWorkspaceDto, isArray: true }) workspaces: ExportedWorkspaceDto[];
  @ApiProperty({
    type: () => ExportedApiKeyDto,
    isArray: true,
    description:
      'Every key of the user, newest first: the key record of the list (masked: never a secret or a hash) plus `state`.',
  })
  api_keys: ExportedApiKeyDto[];
  @ApiProperty({
    type: () => AuditEventDto,
    isArray: true,
    description: 'Every audit event with the user as actor, in any org, oldest first (the audit event record).',
  })
  audit_events: AuditEventDto[];
  @ApiProperty({ type: () => ExportedUsageDto, isArray: true }) usage_attribution: ExportedUsageDto[];
  @ApiProperty({ type: () => ExportedMeterUsageDto, isArray: true }) usage_meters: ExportedMeterUsageDto[];
}
