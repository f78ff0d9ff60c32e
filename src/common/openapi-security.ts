import type { DocumentBuilder } from '@nestjs/swagger';
import { API_KEY_SCHEME, SESSION_SCHEME } from './openapi.js';

/**
 * Declares the two security schemes that this module's decorators reference (`session` and
 * `apiKey`) on a host's Swagger document: `addKeysUsageIdentitySecurity(new DocumentBuilder()...)`.
 * Without it the host document's operations name schemes it never defines.
 */
export function addKeysUsageIdentitySecurity(builder: DocumentBuilder): DocumentBuilder {
  return builder
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'A browser session JWT (keys-usage-identity).',
      },
      SESSION_SCHEME,
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'svc_live_ API key',
        description: 'An API key `svc_live_…` (keys-usage-identity).',
      },
      API_KEY_SCHEME,
    );
}
