import { Controller, Get } from '@nestjs/common';
import { Authenticated, CurrentPrincipal } from '../auth/auth.decorators.js';
import type { Principal } from '../auth/principal.js';
import { IdentityService, type PrincipalView } from './identity.service.js';

@Controller('me')
export class IdentityController {
  constructor(private readonly identity: IdentityService) {}

  @Get()
  @Authenticated()
  me(@CurrentPrincipal() principal: Principal): PrincipalView {
    return this.identity.describe(principal);
  }
}
