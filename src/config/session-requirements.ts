/** The session settings of the environment, as the production checks read them. */
interface SessionEnvironment {
  NODE_ENV: string;
  SESSION_JWT_PUBLIC_KEY?: string;
  SESSION_JWT_JWKS_URI?: string;
  SESSION_JWT_ISSUER?: string;
  SESSION_JWT_AUDIENCE?: string;
}

const WHY = 'required in production when sessions are verified with SESSION_JWT_PUBLIC_KEY or SESSION_JWT_JWKS_URI';

/**
 * In production, a public key or a JWKS must say whose tokens it accepts: an identity provider
 * signs the tokens of all its applications with the same keys, so without an audience and an
 * issuer a token issued for another application would be a session here; and the keys must come
 * over https. One line per problem, naming the variable. HS256 secrets are unaffected.
 */
export function productionSessionProblems(env: SessionEnvironment): string[] {
  if (env.NODE_ENV !== 'production' || (!env.SESSION_JWT_PUBLIC_KEY && !env.SESSION_JWT_JWKS_URI)) return [];
  const problems: string[] = [];
  if (!env.SESSION_JWT_AUDIENCE) problems.push(`  SESSION_JWT_AUDIENCE: ${WHY}`);
  if (!env.SESSION_JWT_ISSUER) problems.push(`  SESSION_JWT_ISSUER: ${WHY}`);
  if (env.SESSION_JWT_JWKS_URI && !/^https:\/\//i.test(env.SESSION_JWT_JWKS_URI))
    problems.push('  SESSION_JWT_JWKS_URI: must be an https:// URL in production');
  return problems;
}
