import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { SCOPE_ENUM } from '../../common/openapi.js';
import { ROLES, type Role, type Scope } from '../../common/roles.js';

@ApiSchema({ name: 'Principal', description: 'The verified caller (contract 2.3). Proves a credential works.' })
export class PrincipalDto {
  @ApiProperty({ format: 'uuid', description: 'User the credential belongs to.' })
  user_id: string;

  @ApiProperty({
    type: 'string',
    format: 'uuid',
    nullable: true,
    description: 'Org it operates in; null for a session with no resolvable org.',
  })
  org_id: string | null;

  @ApiProperty({ format: 'email', description: 'Account e-mail.' })
  email: string;

  @ApiProperty({
    enum: SCOPE_ENUM,
    isArray: true,
    description:
      "Effective scopes: a session's role ceiling, or a key's minted scopes within its owner's current ceiling.",
  })
  scopes: Scope[];

  // OpenAPI 3.0: `nullable` alone does not admit null past an `enum`; null must be one of the values too.
  @ApiProperty({
    type: 'string',
    enum: [...ROLES, null],
    nullable: true,
    description:
      'Advisory only: every write is enforced server-side regardless of this value. null for a session with no resolvable org.',
  })
  org_role: Role | null;

  @ApiProperty({ type: 'integer', minimum: 0, description: 'Number of people in the org.' })
  org_member_count: number;
}
