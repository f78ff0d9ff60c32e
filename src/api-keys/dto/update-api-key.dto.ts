import { ApiSchema } from '@nestjs/swagger';
import { KeySettingsDto } from './key-settings.dto.js';

/** PATCH /api-keys/{keyID} and PATCH /orgs/{org_id}/api-keys/{keyID}: only the fields sent change. */
@ApiSchema({
  name: 'UpdateApiKeyRequest',
  description:
    'The settings to change; omitted fields stay as they are, null clears a setting. Unknown fields are refused (400).',
})
export class UpdateApiKeyDto extends KeySettingsDto {}
