import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { AUDIT_ACTIONS } from '../audit-actions.js';

@ApiSchema({ name: 'AuditActor' })
export class AuditActorDto {
  @ApiProperty({
    enum: ['user', 'operator', 'system'],
    description: 'A signed-in user, the operator CLI, or the service itself.',
  })
  type: string;

  @ApiPropertyOptional({ format: 'uuid', description: "The user's id (type user)." })
  id?: string;

  @ApiPropertyOptional({ description: 'Where a non-user actor acted from (e.g. `cli`).' })
  source?: string;
}

@ApiSchema({ name: 'AuditCredential' })
export class AuditCredentialDto {
  @ApiProperty({ enum: ['session', 'api_key'] })
  type: string;

  @ApiPropertyOptional({ format: 'uuid', description: "The key's id when an API key was used." })
  id?: string;
}

@ApiSchema({ name: 'AuditTarget' })
export class AuditTargetDto {
  @ApiProperty({ description: 'What was changed: `api_key`, `user`, `org`, `workspace`…' })
  type: string;

  @ApiProperty({ format: 'uuid' })
  id: string;
}

@ApiSchema({
  name: 'AuditEvent',
  description: 'One recorded change. Facts that are unknown (e.g. no client address for a CLI action) are omitted.',
})
export class AuditEventDto {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'date-time', description: 'When the change was made.' })
  created_at: string;

  @ApiProperty({ format: 'uuid' })
  org_id: string;

  @ApiProperty({ enum: AUDIT_ACTIONS })
  action: string;

  @ApiProperty({ type: () => AuditActorDto })
  actor: AuditActorDto;

  @ApiPropertyOptional({ type: () => AuditCredentialDto, description: 'The credential the actor used (users only).' })
  credential?: AuditCredentialDto;

  @ApiProperty({ type: () => AuditTargetDto })
  target: AuditTargetDto;

  @ApiPropertyOptional({ description: 'The client address as the service saw it (TRUST_PROXY applies).' })
  client_address?: string;

  @ApiPropertyOptional({ description: 'The User-Agent header (at most 512 characters).' })
  user_agent?: string;

  @ApiPropertyOptional({ description: 'The request id (X-Request-Id), to match log lines.' })
  request_id?: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'What changed; never a secret.' })
  details: Record<string, unknown>;
}

@ApiSchema({ name: 'AuditEventPage' })
export class AuditEventPageDto {
  @ApiProperty({ type: () => AuditEventDto, isArray: true, description: 'Newest first.' })
  events: AuditEventDto[];

  @ApiPropertyOptional({ description: 'Present when more events exist: pass it as `cursor`.' })
  next_cursor?: string;
}
