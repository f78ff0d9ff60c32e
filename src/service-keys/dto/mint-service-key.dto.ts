import { ApiSchema, OmitType } from '@nestjs/swagger';
import { MintApiKeyDto } from '../../api-keys/dto/mint-api-key.dto.js';

/**
 * POST /orgs/{org_id}/service-keys: the personal mint's fields without `org_id` (the path names
 * the org), with the same rules. The per-key settings (rate limits, credits, CIDRs, metadata)
 * join here, beside the personal mint's, once keys carry them.
 */
@ApiSchema({
  name: 'MintServiceKeyRequest',
  description: "Unknown fields are refused (400). Scopes are capped by the minting admin's role (403 above it); omitted or []: read-only.",
})
export class MintServiceKeyDto extends OmitType(MintApiKeyDto, ['org_id'] as const) {}
