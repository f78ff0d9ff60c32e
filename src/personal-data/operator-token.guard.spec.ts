import { HttpException, NotFoundException, UnauthorizedException } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it } from 'vitest';
import { AuthFailureThrottle } from '../auth/auth-failure-throttle.js';
import { testSettings } from '../../test/support/factories.js';
import { OperatorTokenGuard } from './operator-token.guard.js';

const TOKEN = 'operator-token-0123456789abcdef-0123456789abcdef';
const unthrottled = () => new AuthFailureThrottle(testSettings({ authFailureLimit: 0 }));

function context(authorization?: string) {
  const headers: Record<string, string> = {};
  const response = { header: (name: string, value: string) => (headers[name] = value) };
  const ctx = new ExecutionContextHost([{ headers: authorization === undefined ? {} : { authorization } }, response]);
  return { ctx, headers };
}

describe('OperatorTokenGuard', () => {
  it('lets through exactly Bearer <ADMIN_API_TOKEN>', async () => {
    await expect(
      new OperatorTokenGuard({ adminToken: TOKEN }, unthrottled()).canActivate(context(`Bearer ${TOKEN}`).ctx),
    ).resolves.toBe(true);
  });

  it('refuses anything else with 401 and a Bearer challenge', async () => {
    const guard = new OperatorTokenGuard({ adminToken: TOKEN }, unthrottled());
    for (const header of [
      undefined,
      TOKEN,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      'Bearer svc_live_abc',
      `Basic ${TOKEN}`,
    ]) {
      const { ctx, headers } = context(header);
      await expect(guard.canActivate(ctx), header).rejects.toThrow(UnauthorizedException);
      expect(headers['WWW-Authenticate']).toBe('Bearer realm="admin"');
    }
  });

  it('answers 404 whatever is sent when ADMIN_API_TOKEN is unset: the routes are off', async () => {
    const guard = new OperatorTokenGuard({}, unthrottled());
    await expect(guard.canActivate(context(`Bearer ${TOKEN}`).ctx)).rejects.toThrow(NotFoundException);
    await expect(guard.canActivate(context().ctx)).rejects.toThrow(NotFoundException);
  });

  it('counts wrong tokens as failed authentications of the address: past AUTH_FAILURE_LIMIT, 429 even for the right one', async () => {
    const guard = new OperatorTokenGuard(
      { adminToken: TOKEN },
      new AuthFailureThrottle(testSettings({ authFailureLimit: 2 })),
    );
    for (let i = 0; i < 2; i++)
      await expect(guard.canActivate(context('Bearer guess').ctx)).rejects.toThrow(UnauthorizedException);
    const { ctx, headers } = context(`Bearer ${TOKEN}`);
    const refused = await guard.canActivate(ctx).catch((e: HttpException) => e);
    expect(refused).toBeInstanceOf(HttpException);
    expect((refused as HttpException).getStatus()).toBe(429);
    expect(Number(headers['Retry-After'])).toBeGreaterThan(0);
  });
});
