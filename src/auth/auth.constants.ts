export const API_KEY_STRATEGY = 'api-key';
export const SESSION_STRATEGY = 'session-jwt';

/**
 * What our strategies return from `getPassportInstance()`, which @nestjs/passport's mixin asks
 * for to register them: nothing is registered on the process-wide passport object.
 * CredentialGuard calls the strategies directly, and a host's own strategies of these names (or a
 * second instance of this module in the process) must neither replace ours nor be replaced.
 */
export const UNREGISTERED = { use(): void {} };
