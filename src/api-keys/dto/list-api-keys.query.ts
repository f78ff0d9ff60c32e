import { ApiPropertyOptional } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import { IsUuidString } from '../../common/validation.js';

export class ListApiKeysQuery {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only keys bound to this org (one of yours: another is a 404).' })
  @ValidateIf((o: ListApiKeysQuery) => o.org_id !== undefined)
  @IsUuidString()
  org_id?: string;
}
