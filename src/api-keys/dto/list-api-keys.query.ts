import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, ValidateIf } from 'class-validator';
import { PageQuery } from '../../common/pagination.js';
import { IsUuidString } from '../../common/validation.js';
import { KEY_STATES, type KeyState } from '../key-state.js';

/** `GET /api-keys?org_id=&state=&limit=&cursor=`. */
export class ListApiKeysQuery extends PageQuery {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only keys bound to this org (one of yours: another is a 404).' })
  @ValidateIf((o: ListApiKeysQuery) => o.org_id !== undefined)
  @IsUuidString()
  org_id?: string;

  @ApiPropertyOptional({
    enum: KEY_STATES,
    description:
      "Only keys in this state, as the record's `state` says it (denied wins, then revoked, pending, expired, disabled; else active).",
  })
  @ValidateIf((o: ListApiKeysQuery) => o.state !== undefined)
  @IsIn(KEY_STATES, { message: `state must be one of ${KEY_STATES.join(', ')}` })
  state?: KeyState;
}
