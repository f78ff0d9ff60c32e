export const API_KEY_STRATEGY = 'api-key';
export const SESSION_STRATEGY = 'session-jwt';
