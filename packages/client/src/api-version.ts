import { DOCUMENT_API_VERSIONS } from './generated/api-versions.js';

/** The version of today's API, used when the OpenAPI document the client was built from declares none. */
export const FALLBACK_API_VERSION = '2026-11-01';

/** The API versions this client knows, oldest first: those its OpenAPI document declares, else the fallback. */
export const API_VERSIONS: readonly string[] =
  DOCUMENT_API_VERSIONS.length > 0 ? DOCUMENT_API_VERSIONS : [FALLBACK_API_VERSION];

/** The newest version the client knows: what it sends in `Api-Version` unless told otherwise. */
export const LATEST_API_VERSION: string = API_VERSIONS[API_VERSIONS.length - 1];
