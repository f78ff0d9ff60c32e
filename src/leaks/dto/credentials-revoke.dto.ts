import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsString } from 'class-validator';

export const MAX_REPORTED_CREDENTIALS = 100;

@ApiSchema({ name: 'RevokeCredentialsRequest' })
export class RevokeCredentialsDto {
  @ApiProperty({
    type: [String],
    minItems: 1,
    maxItems: MAX_REPORTED_CREDENTIALS,
    maxLength: 200,
    example: ['svc_live_YguRbYLvsx9A_8b8g5JZWZSOlorO1EmD8wwOurInRuisQ2VCuua'],
    description: 'Keys found where they should not be.',
  })
  @IsArray({ message: 'credentials must be an array of strings' })
  @ArrayMinSize(1, { message: `credentials must hold 1 to ${MAX_REPORTED_CREDENTIALS} items` })
  @ArrayMaxSize(MAX_REPORTED_CREDENTIALS, { message: `credentials must hold 1 to ${MAX_REPORTED_CREDENTIALS} items` })
  @IsString({ each: true, message: 'credentials must be an array of strings' })
  credentials: string[];
}

@ApiSchema({
  name: 'GithubTokenReport',
  description: "One answer per reported token, in GitHub's secret scanning partner format.",
})
export class GithubTokenReportDto {
  @ApiProperty({ description: 'Hex SHA-256 of the token as reported.' }) token_hash: string;
  @ApiProperty({ description: 'The type GitHub sent, echoed.' }) token_type: string;
  @ApiProperty({ enum: ['true_positive', 'false_positive'] }) label: string;
}
