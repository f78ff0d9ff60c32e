import { NotFoundException, UnauthorizedException } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { describe, expect, it } from 'vitest';
import { OperatorTokenGuard } from './operator-token.guard.js';

const TOKEN = 'operator-token-0123456789abcdef-0123456789abcdef';

function context(authorization?: string) {
  const headers: Record<string, string> = {};
  const response = { header: (name: string, value: string) => (headers[name] = value) };
  const ctx = new ExecutionContextHost([{ headers: authorization === undefined ? {} : { authorization } }, response]);
  return { ctx, headers };
}

describe('OperatorTokenGuard', () => {
  it('lets through exactly Bearer <ADMIN_API_TOKEN>', () => {
    expect(new OperatorTokenGuard({ adminToken: TOKEN }).canActivate(context(`Bearer ${TOKEN}`).ctx)).toBe(true);
  });

  it('refuses anything else with 401 and a Bearer challenge', () => {
    const guard = new OperatorTokenGuard({ adminToken: TOKEN });
    for (const header of [undefined, TOKEN, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer svc_live_abc', `Basic ${TOKEN}`]) {
      const { ctx, headers } = context(header);
      expect(() => guard.canActivate(ctx), header).toThrow(UnauthorizedException);
      expect(headers['WWW-Authenticate']).toBe('Bearer realm="admin"');
    }
  });

  it('answers 404 whatever is sent when ADMIN_API_TOKEN is unset: the routes are off', () => {
    const guard = new OperatorTokenGuard({});
    expect(() => guard.canActivate(context(`Bearer ${TOKEN}`).ctx)).toThrow(NotFoundException);
    expect(() => guard.canActivate(context().ctx)).toThrow(NotFoundException);
  });
});
