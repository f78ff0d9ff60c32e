import { Module, type DynamicModule } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module.js';
import { IdentityController } from './identity.controller.js';
import { IdentityService } from './identity.service.js';
import { ScopesController } from './scopes.controller.js';

@Module({
  imports: [AuthModule],
  providers: [IdentityService],
  exports: [IdentityService],
})
export class IdentityModule {
  static withHttp(): DynamicModule {
    return { module: IdentityModule, controllers: [IdentityController, ScopesController] };
  }
}
