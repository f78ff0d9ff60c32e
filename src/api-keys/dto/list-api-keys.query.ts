import { ValidateIf } from 'class-validator';
import { IsUuidString } from '../../common/validation.js';

export class ListApiKeysQuery {
  @ValidateIf((o: ListApiKeysQuery) => o.org_id !== undefined)
  @IsUuidString()
  org_id?: string;
}
