import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, ValidateIf } from 'class-validator';
import { PageQuery } from '../../common/pagination.js';
import { IsUuidString } from '../../common/validation.js';
import { KEY_STATES, type KeyState } from '../key-state.js';

/** `GET /orgs/{org_id}/api-keys`: a page, narrowed by state and/or owner. */
export class ListOrgApiKeysQuery extends PageQuery {
  @ApiPropertyOptional({
    enum: KEY_STATES,
    description: 'Only keys in this state (expired: past expires_at and not revoked).',
  })
  @ValidateIf((o: ListOrgApiKeysQuery) => o.state !== undefined)
  @IsIn(KEY_STATES, { message: `state must be one of ${KEY_STATES.join(', ')}` })
  state?: KeyState;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only keys minted by this user.' })
  @ValidateIf((o: ListOrgApiKeysQuery) => o.user_id !== undefined)
  @IsUuidString()
  user_id?: string;
}
