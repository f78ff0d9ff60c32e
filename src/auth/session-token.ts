import jwt from 'jsonwebtoken';
import type { KeyObject } from 'node:crypto';

export interface SessionTokenInput {
  userId: string;
  email: string;
  orgId?: string | null;
  ttlSeconds: number;
  issuer?: string;
  audience?: string;
}

/** Signs a development session JWT (HS256) the way an identity provider would. */
export function signSessionToken(secret: KeyObject, input: SessionTokenInput): string {
  const claims: Record<string, unknown> = { email: input.email };
  if (input.orgId) claims.org_id = input.orgId;
  return jwt.sign(claims, secret, {
    algorithm: 'HS256',
    subject: input.userId,
    expiresIn: input.ttlSeconds,
    ...(input.issuer ? { issuer: input.issuer } : {}),
    ...(input.audience ? { audience: input.audience } : {}),
  });
}
