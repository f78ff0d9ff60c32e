import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { PLANS, ROLES } from '../../common/roles.js';

@ApiSchema({ name: 'Org', description: 'An org the caller belongs to, with the caller’s role in it.' })
export class OrgDto {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ enum: PLANS })
  plan: (typeof PLANS)[number];

  @ApiProperty({ enum: ROLES, description: "The caller's role in this org." })
  role: (typeof ROLES)[number];
}

@ApiSchema({ name: 'OrgList' })
export class OrgListDto {
  @ApiProperty({ type: () => OrgDto, isArray: true, description: 'Newest membership first.' })
  orgs: OrgDto[];

  @ApiPropertyOptional({ description: 'Present when more orgs exist: pass it as `cursor`.' })
  next_cursor?: string;
}

@ApiSchema({ name: 'OrgMember' })
export class OrgMemberDto {
  @ApiProperty({ format: 'uuid' })
  user_id: string;

  @ApiProperty()
  email: string;

  @ApiProperty({ enum: ROLES })
  role: (typeof ROLES)[number];

  @ApiProperty({ format: 'date-time', description: 'When the user joined the org.' })
  joined_at: string;
}

@ApiSchema({ name: 'OrgMemberList' })
export class OrgMemberListDto {
  @ApiProperty({ type: () => OrgMemberDto, isArray: true, description: 'Newest member first.' })
  members: OrgMemberDto[];

  @ApiPropertyOptional({ description: 'Present when more members exist: pass it as `cursor`.' })
  next_cursor?: string;
}
