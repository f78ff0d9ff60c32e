import { Controller, Get } from '@nestjs/common';
import { CurrentPrincipal, RequireScopes } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { UsageService, type UsageReport } from './usage.service.js';

@Controller('usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  /** Plan and daily meters. Never charges anything. */
  @Get()
  @RequireScopes('decisions:read')
  report(@CurrentPrincipal() principal: Principal): Promise<UsageReport> {
    return this.usage.report(principal);
  }
}
