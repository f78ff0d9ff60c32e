import { IsArray, IsDefined, IsInt, IsString, Max, Min, ValidateIf } from 'class-validator';
import { SCOPES, type Scope } from '../../common/roles.js';
import { EachIn, IsStorableText, IsUuidString, MaxStringLength } from '../../common/validation.js';

const present = (field: string) => ValidateIf((o: Record<string, unknown>) => o[field] !== undefined);

/** POST /api-keys. `null` is not "absent": an explicit null is refused like any wrong type. */
export class MintApiKeyDto {
  @IsDefined({ message: 'org_id is required' })
  @IsUuidString()
  org_id: string;

  @present('name')
  @IsString({ message: 'name must be a string' })
  @MaxStringLength(100)
  @IsStorableText()
  name?: string;

  @present('scopes')
  @IsArray({ message: 'scopes must be an array of strings' })
  @EachIn(SCOPES, { message: `scopes may only contain ${SCOPES.join(' and ')}` })
  scopes?: Scope[];

  @present('expires_in_days')
  @IsInt({ message: 'expires_in_days must be an integer from 0 to 366' })
  @Min(0, { message: 'expires_in_days must be an integer from 0 to 366' })
  @Max(366, { message: 'expires_in_days must be an integer from 0 to 366' })
  expires_in_days?: number;
}
