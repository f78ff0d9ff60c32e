import { ApiSchema, OmitType } from '@nestjs/swagger';
import { MintApiKeyDto } from '../../api-keys/dto/mint-api-key.dto.js';

/**
 * POST /orgs/{org_id}/service-keys: the personal mint's fields without `org_id` (the path names
 * the org), with the same rules: name, scopes, expiry and the per-key settings (enabled, rate
 * limits, credits, networks, metadata).
 */
@ApiSchema({
  name: 'MintServiceKeyRequest',
  description:
    "Unknown fields are refused (400). Scopes are capped by the minting admin's role (403 above it); omitted or []: read-only. " +
    "The org's key policy applies as to the admin's own keys (never held for approval). The per-key settings are those of POST /api-keys.",
})
export class MintServiceKeyDto extends OmitType(MintApiKeyDto, ['org_id'] as const) {}
