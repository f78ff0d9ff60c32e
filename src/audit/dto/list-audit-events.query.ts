import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { PageQuery } from '../../common/pagination.js';
import { IsRfc3339, IsUuidString, present } from '../../common/validation.js';
import { AUDIT_ACTIONS } from '../audit-actions.js';

/** `GET /orgs/{org_id}/audit-events`: a page, narrowed by any of the filters (all must hold). */
export class ListAuditEventsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only events of this action.' })
  @present('action')
  @IsIn(AUDIT_ACTIONS, { message: `action must be one of ${AUDIT_ACTIONS.join(', ')}` })
  action?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only events whose actor is this user.' })
  @present('actor_id')
  @IsUuidString()
  actor_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only events about this target (a key, a user, the org...).' })
  @present('target_id')
  @IsUuidString()
  target_id?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Only events at or after this time (RFC 3339).' })
  @present('since')
  @IsRfc3339()
  since?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'Only events before this time (RFC 3339).' })
  @present('until')
  @IsRfc3339()
  until?: string;
}
