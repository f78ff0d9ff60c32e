export const PERSONAL_DATA_OPTIONS = Symbol('PERSONAL_DATA_OPTIONS');

export interface PersonalDataOptions {
  /** ADMIN_API_TOKEN: the operator's bearer token for `/admin/...`; unset, those routes answer 404. */
  adminToken?: string;
}

/** The OpenAPI security scheme of the operator's routes (declared in http/openapi.ts). */
export const ADMIN_TOKEN_SCHEME = 'adminToken';
