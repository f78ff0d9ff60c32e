import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { SCOPE_ENUM } from '../../common/openapi.js';

@ApiSchema({ name: 'ScopeDescription', description: 'A scope this deployment registers.' })
export class ScopeDescriptionDto {
  @ApiProperty({ enum: SCOPE_ENUM, description: 'The scope, `resource:action` style.' })
  scope: string;

  @ApiProperty({ description: 'What a key holding it may do, as the deployment describes it.' })
  description: string;

  @ApiProperty({
    description:
      "Whether the caller's role in its org may put it on a key (the role's ceiling; the org's key policy may narrow it further). False for a session with no org.",
  })
  grantable: boolean;
}

/** GET /scopes. */
@ApiSchema({ name: 'ScopeList', description: "The deployment's scopes, in registration order." })
export class ScopeListDto {
  @ApiProperty({ type: ScopeDescriptionDto, isArray: true })
  scopes: ScopeDescriptionDto[];
}
