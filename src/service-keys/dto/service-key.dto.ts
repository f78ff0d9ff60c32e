import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { ApiKeyRecordDto, KeyOwnerDto } from '../../api-keys/dto/api-key-record.dto.js';

/** A service key as the org's owners and admins see it: the key record, its owner and who minted it. Never the key itself. */
@ApiSchema({
  name: 'ServiceKey',
  description: 'A key the org owns. Never the key itself; fields that do not apply yet are omitted.',
})
export class ServiceKeyDto extends ApiKeyRecordDto {
  @ApiProperty({ type: () => KeyOwnerDto })
  owner: KeyOwnerDto;

  @ApiPropertyOptional({
    format: 'uuid',
    description:
      'The owner or admin who minted it; the key keeps working when they leave the org. Absent for a key the operator CLI minted.',
  })
  created_by?: string;

  @ApiProperty({
    format: 'uuid',
    description: "The org's service account, the key's holder: GET /me with the key answers this user_id.",
  })
  user_id: string;
}

@ApiSchema({
  name: 'MintedServiceKey',
  description: 'The service key record plus the full key, returned exactly once (at mint and at rotation).',
})
export class MintedServiceKeyDto extends ServiceKeyDto {
  @ApiProperty({
    pattern: '^svc_live_[A-Za-z0-9_]+$',
    description: 'The full key. Shown only in this response; store it now.',
  })
  key: string;
}

@ApiSchema({ name: 'ServiceKeyList' })
export class ServiceKeyListDto {
  @ApiProperty({
    type: () => ServiceKeyDto,
    isArray: true,
    description: 'Newest first; revoked and expired keys included unless filtered.',
  })
  keys: ServiceKeyDto[];

  @ApiPropertyOptional({ description: 'Present when more keys exist: pass it as `cursor`.' })
  next_cursor?: string;
}
